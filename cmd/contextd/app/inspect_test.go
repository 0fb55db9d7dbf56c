package app

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
)

func TestInspectRefusals(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want *catalog.Class
		text string
	}{
		{"two records", []string{"inspect", "a", "b"}, catalog.ErrUsage, "at most one argument"},
		// The test's stdout is a buffer, not a terminal.
		{"not a terminal", []string{"inspect"}, catalog.ErrUsage, "run it in a terminal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(context.Background(), tc.args, &out, &errb)
			if code != tc.want.Exit || !strings.HasPrefix(errb.String(), tc.want.Code+": ") || !strings.Contains(errb.String(), tc.text) {
				t.Fatalf("exit %d, stderr %q; want %d, %s and %q", code, errb.String(), tc.want.Exit, tc.want.Code, tc.text)
			}
		})
	}
}

func TestAttachNoDaemon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contextd.sock")
	_, _, err := attachInspect(path, "")
	if !errors.Is(err, catalog.ErrDaemonUnavailable) || !strings.Contains(err.Error(), path) {
		t.Fatalf("attach to a missing socket: %v, want %s naming the path", err, catalog.ErrDaemonUnavailable.Code)
	}
}
