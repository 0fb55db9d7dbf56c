// Package safeunpack unpacks an untrusted tool source (a tar, tar.gz or zip archive, or a directory tree) under a destination, refusing every entry that could leave it, link elsewhere, or exceed the fetch's bounds.
package safeunpack

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
)

// refusal is why an entry is refused: its text names the reason, and it
// unwraps to the catalog class that decides the exit status and wire code.
type refusal struct {
	text  string
	class *catalog.Class
}

func (r *refusal) Error() string { return r.text }
func (r *refusal) Unwrap() error { return r.class }

// The reasons an archive or tree is refused. Each is wrapped with the
// entry's name; errors.Is matches both the reason and its catalog class.
var (
	ErrEscape    error = &refusal{"the path leaves the destination (absolute or with ..)", catalog.ErrPolicy}
	ErrLink      error = &refusal{"links are refused", catalog.ErrPolicy}
	ErrSpecial   error = &refusal{"not a regular file or directory", catalog.ErrPolicy}
	ErrTooLarge  error = &refusal{"the contents exceed the size bound", catalog.ErrPolicy}
	ErrTooMany   error = &refusal{"the entries exceed the count bound", catalog.ErrPolicy}
	ErrBadName   error = &refusal{"the name is empty, not UTF-8, or holds a control character or backslash", catalog.ErrBadInput}
	ErrDuplicate error = &refusal{"the path appears twice, or as both a file and a directory", catalog.ErrBadInput}
	ErrFormat    error = &refusal{"not a tar, tar.gz or zip archive, or a damaged one", catalog.ErrBadInput}
)

// CleanName checks an entry's name and returns it as a clean relative path
// ("" for the destination itself, as "./" names it). Names are refused
// rather than repaired: a leading "/" or any ".." element is an escape even
// when cleaning would keep it inside, since whoever wrote it meant to leave.
// A backslash is refused because an archive made on Windows means it as a
// separator, and a control character because the name is shown to the user.
func CleanName(name string) (string, error) {
	if name == "" || !utf8.ValidString(name) || strings.ContainsRune(name, '\\') {
		return "", fmt.Errorf("entry %q: %w", name, ErrBadName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "", fmt.Errorf("entry %q: %w", name, ErrBadName)
		}
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("entry %q: %w", name, ErrEscape)
	}
	var kept []string
	for elem := range strings.SplitSeq(name, "/") {
		switch elem {
		case "", ".":
		case "..":
			return "", fmt.Errorf("entry %q: %w", name, ErrEscape)
		default:
			kept = append(kept, elem)
		}
	}
	return strings.Join(kept, "/"), nil
}
