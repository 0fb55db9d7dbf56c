// Package bytesize reads a size written as bytes or with a binary unit
// ("512MiB", "1G", "64 KiB"): the one reading for the configuration and
// the tool manifests.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// shift is each unit's power of two: K, M, G, T, with or without "B" or
// "iB", in any case; "" and "B" are bytes.
var shift = map[string]uint{"": 0, "B": 0, "K": 10, "KB": 10, "KIB": 10, "M": 20, "MB": 20, "MIB": 20,
	"G": 30, "GB": 30, "GIB": 30, "T": 40, "TB": 40, "TIB": 40}

// Parse reads s as a number of bytes.
func Parse(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRight(t, "KMGTiBkmgtb ")
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (examples: \"512MiB\", \"1GiB\")", t)
	}
	sh, ok := shift[unit]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (use KiB, MiB, GiB, TiB)", t, unit)
	}
	if n > (1<<63)>>sh {
		return 0, fmt.Errorf("%q is too large", t)
	}
	return n << sh, nil
}
