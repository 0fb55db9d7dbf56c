package catalog_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire"
)

var codeRE = regexp.MustCompile(`^CTXD-E\d{3}$`)

func TestCodesUniqueAndWellFormed(t *testing.T) {
	all := catalog.All()
	if len(all) < 10 {
		t.Fatalf("catalog has only %d classes; the registry is not being filled", len(all))
	}
	seenCode := map[string]bool{}
	seenName := map[string]string{}
	for i, c := range all {
		if !codeRE.MatchString(c.Code) {
			t.Errorf("code %q is not of the form CTXD-Exxx", c.Code)
		}
		if seenCode[c.Code] {
			t.Errorf("code %s defined twice", c.Code)
		}
		seenCode[c.Code] = true
		if prev, dup := seenName[c.Name]; dup {
			t.Errorf("%s and %s share the message %q", prev, c.Code, c.Name)
		}
		seenName[c.Name] = c.Code
		if c.Name == "" || c.Hint == "" {
			t.Errorf("%s: empty name or hint", c.Code)
		}
		if c.Name != strings.ToLower(c.Name) {
			t.Errorf("%s: name %q must be lower case", c.Code, c.Name)
		}
		if c.Exit <= 0 || c.Exit > 255 {
			t.Errorf("%s: exit status %d out of range", c.Code, c.Exit)
		}
		if c.GRPC == codes.OK {
			t.Errorf("%s: gRPC code OK for an error", c.Code)
		}
		if i > 0 && all[i-1].Code >= c.Code {
			t.Errorf("All() not ordered: %s before %s", all[i-1].Code, c.Code)
		}
		if catalog.Lookup(c.Code) != c {
			t.Errorf("Lookup(%s) does not return the class", c.Code)
		}
	}
	if catalog.Lookup("CTXD-E999") != nil {
		t.Error("Lookup of an undefined code returned a class")
	}
}

// sentinels are the exported classes, checked to be registered (a class made
// outside define would be missing from All and from docs/errors.md).
var sentinels = []*catalog.Class{
	catalog.ErrUsage, catalog.ErrBadInput, catalog.ErrUnknownTool,
	catalog.ErrDaemonUnavailable, catalog.ErrSocketPermission, catalog.ErrPeerRefused,
	catalog.ErrConnectionLost, catalog.ErrShuttingDown, catalog.ErrInterrupted, catalog.ErrDaemonIdentity,
	catalog.ErrOutsideWorkspace, catalog.ErrNotFound, catalog.ErrNotRegular, catalog.ErrIO,
	catalog.ErrSymlinkLoop, catalog.ErrFilePermission,
	catalog.ErrTimeout, catalog.ErrLaunch, catalog.ErrSandbox, catalog.ErrUnknownContinuation,
	catalog.ErrInternal, catalog.ErrPolicy, catalog.ErrRoot, catalog.ErrAlreadyRunning, catalog.ErrConflict,
	catalog.ErrConfig,
}

func TestSentinelsRegistered(t *testing.T) {
	if len(sentinels) != len(catalog.All()) {
		t.Errorf("test lists %d sentinels, catalog has %d: update the list", len(sentinels), len(catalog.All()))
	}
	for _, c := range sentinels {
		if catalog.Lookup(c.Code) != c {
			t.Errorf("%s (%s) is not the registered class", c.Code, c.Name)
		}
	}
}

func TestStatusRoundTrip(t *testing.T) {
	for _, c := range catalog.All() {
		t.Run(c.Code, func(t *testing.T) {
			orig := fmt.Errorf("doing something with /some/path: %w", c)
			st := catalog.ToStatus(orig)
			s, ok := status.FromError(st)
			if !ok {
				t.Fatalf("ToStatus returned a non-status error %T", st)
			}
			if s.Code() != c.GRPC {
				t.Errorf("status code %v, want %v", s.Code(), c.GRPC)
			}
			back, fromDaemon := catalog.FromStatus(st)
			if !fromDaemon {
				t.Fatal("FromStatus did not find the catalog detail")
			}
			if !errors.Is(back, c) {
				t.Errorf("round trip lost the class: got %v (class %s)", back, catalog.ClassOf(back).Code)
			}
			for _, other := range catalog.All() {
				if other != c && errors.Is(back, other) {
					t.Errorf("round trip also matches %s", other.Code)
				}
			}
			if back.Error() != orig.Error() {
				t.Errorf("message changed: %q -> %q", orig.Error(), back.Error())
			}
			if catalog.ExitCode(back) != c.Exit {
				t.Errorf("ExitCode %d, want %d", catalog.ExitCode(back), c.Exit)
			}
		})
	}
}

func TestFromStatusWithoutDetail(t *testing.T) {
	plain := status.Error(codes.Unavailable, "connection refused")
	back, fromDaemon := catalog.FromStatus(plain)
	if fromDaemon {
		t.Error("a status without detail was taken as the daemon's")
	}
	if back != plain {
		t.Errorf("FromStatus changed a transport error: %v", back)
	}
	notStatus := errors.New("plain")
	if back, ok := catalog.FromStatus(notStatus); ok || back != notStatus {
		t.Errorf("FromStatus(plain error) = %v, %v", back, ok)
	}
	if catalog.ToStatus(nil) != nil || catalog.ToWire(nil) != nil || catalog.FromWire(nil) != nil {
		t.Error("nil must map to nil")
	}
}

func TestFromWire(t *testing.T) {
	tests := []struct {
		code string
		want *catalog.Class
	}{
		{"CTXD-E021", catalog.ErrNotFound},
		{"CTXD-E030", catalog.ErrTimeout},
		{"CTXD-E999", catalog.ErrInternal}, // from a newer daemon
		{"", catalog.ErrInternal},
		{"garbage", catalog.ErrInternal},
	}
	for _, tt := range tests {
		err := catalog.FromWire(&wire.Error{Code: tt.code, Message: "msg from daemon " + tt.code})
		if !errors.Is(err, tt.want) {
			t.Errorf("FromWire(%q) is %s, want %s", tt.code, catalog.ClassOf(err).Code, tt.want.Code)
		}
		if err.Error() != "msg from daemon "+tt.code {
			t.Errorf("FromWire(%q) lost the message: %q", tt.code, err.Error())
		}
	}
}

func TestClassOfAndFormat(t *testing.T) {
	if catalog.ExitCode(nil) != 0 {
		t.Error("ExitCode(nil) != 0")
	}
	unclassified := errors.New("boom")
	if catalog.ClassOf(unclassified) != catalog.ErrInternal {
		t.Error("an unclassified error must count as internal")
	}
	if got := catalog.ExitCode(unclassified); got != catalog.ExitSoftware {
		t.Errorf("ExitCode(unclassified) = %d", got)
	}
	err := fmt.Errorf("safe_read: x.txt: %w", catalog.ErrNotFound)
	out := catalog.Format(err)
	if !strings.HasPrefix(out, "CTXD-E021: safe_read: x.txt: no such file or directory\nhint: ") {
		t.Errorf("Format = %q", out)
	}
	// A message that does not contain the class name gets it appended.
	out = catalog.Format(&wrapped{catalog.ErrTimeout})
	if !strings.HasPrefix(out, "CTXD-E030: custom: command timed out\n") {
		t.Errorf("Format = %q", out)
	}
}

type wrapped struct{ c *catalog.Class }

func (w *wrapped) Error() string { return "custom" }
func (w *wrapped) Unwrap() error { return w.c }

func TestErrorsDocUpToDate(t *testing.T) {
	b, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatalf("read docs/errors.md: %v (run `go generate ./catalog`)", err)
	}
	if string(b) != catalog.Markdown() {
		t.Fatal("docs/errors.md is out of date with catalog/catalog.go: run `go generate ./catalog` and commit the result")
	}
	for _, c := range catalog.All() {
		if !strings.Contains(string(b), "| "+c.Code+" |") {
			t.Errorf("docs/errors.md lacks %s", c.Code)
		}
	}
}
