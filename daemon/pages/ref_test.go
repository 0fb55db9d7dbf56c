package pages

import (
	"errors"
	"strings"
	"testing"
)

const hexID = "0123456789abcdef0123456789abcdef"

func TestRefs(t *testing.T) {
	tests := []struct {
		ref    string
		id     string
		offset int64
		bad    bool
	}{
		{ref: "c" + hexID, id: hexID},
		{ref: "c" + hexID + "-1", id: hexID, offset: 1},
		{ref: "c" + hexID + "-1a2b", id: hexID, offset: 0x1a2b},
		{ref: "c" + hexID + "-7fffffffffffffff", id: hexID, offset: 1<<63 - 1},
		{ref: "", bad: true},
		{ref: "c", bad: true},
		{ref: hexID, bad: true},
		{ref: "C" + hexID, bad: true},
		{ref: "c" + strings.ToUpper(hexID), bad: true},
		{ref: "c" + hexID[:31], bad: true},
		{ref: "c" + hexID + "0", bad: true},
		{ref: "c" + hexID + "-", bad: true},
		{ref: "c" + hexID + "-0", bad: true},
		{ref: "c" + hexID + "-01", bad: true},
		{ref: "c" + hexID + "-A", bad: true},
		{ref: "c" + hexID + "--1", bad: true},
		{ref: "c" + hexID + "-8000000000000000", bad: true},
		{ref: "c" + hexID + "-fffffffffffffffff", bad: true},
		{ref: "c../../../../etc/passwd", bad: true},
		{ref: "c" + hexID[:30] + "/.", bad: true},
		{ref: "c" + hexID + "/..", bad: true},
		{ref: "c" + hexID + ".meta", bad: true},
		{ref: "c" + hexID + "\x00", bad: true},
		{ref: "c" + strings.Repeat("a", 10000), bad: true},
	}
	for _, tt := range tests {
		id, off, err := ParseRef(tt.ref)
		if tt.bad {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseRef(%.60q) = %q, %d, %v; want ErrMalformed", tt.ref, id, off, err)
			}
			if err != nil && len(err.Error()) > 200 {
				t.Errorf("ParseRef error repeats a long input: %d bytes", len(err.Error()))
			}
			continue
		}
		if err != nil || id != tt.id || off != tt.offset {
			t.Errorf("ParseRef(%q) = %q, %d, %v; want %q, %d", tt.ref, id, off, err, tt.id, tt.offset)
		}
		if got := FormatRef(id, off); got != tt.ref {
			t.Errorf("FormatRef(%q, %d) = %q, want %q", id, off, got, tt.ref)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"c" + hexID, "c" + hexID + "-10", "c../x", "", "c" + hexID + "-0", "c" + hexID + ".out"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, off, err := ParseRef(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		// Accepted: exactly one way to write it, and nothing a path could
		// use.
		if FormatRef(id, off) != s {
			t.Fatalf("ParseRef(%q) = %q, %d, which formats as %q", s, id, off, FormatRef(id, off))
		}
		if len(s) > maxRefLen || strings.ContainsAny(s, "/.\\\x00") || len(id) != idLen || !isHex(id) || off < 0 {
			t.Fatalf("ParseRef accepted %q", s)
		}
	})
}
