package catalog_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
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
		if c.GRPC == catalog.StatusOK {
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
	catalog.ErrTimeout, catalog.ErrLaunch, catalog.ErrSandbox, catalog.ErrServerStart, catalog.ErrServerExited, catalog.ErrUnknownContinuation,
	catalog.ErrInternal, catalog.ErrPolicy, catalog.ErrRoot, catalog.ErrAlreadyRunning, catalog.ErrConflict, catalog.ErrAuditDamaged, catalog.ErrCacheBusy,
	catalog.ErrConfig,
	catalog.ErrNoRecord, catalog.ErrBranchBudget, catalog.ErrNoBranch, catalog.ErrBranchDepth, catalog.ErrStoreUnavailable, catalog.ErrNotInstalled,
	catalog.ErrPluginStart, catalog.ErrPluginExited, catalog.ErrInstallRefused, catalog.ErrChecksum, catalog.ErrApproval,
	catalog.ErrUnknownEndpoint, catalog.ErrBodyTooLarge, catalog.ErrToken, catalog.ErrHostRefused, catalog.ErrHookSignature,
	catalog.ErrHookReplay, catalog.ErrHookTimestamp, catalog.ErrRateLimited, catalog.ErrUnknownAutomation, catalog.ErrNoCall,
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

func TestFromDetail(t *testing.T) {
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
		err := catalog.FromDetail(&catalog.Detail{Code: tt.code, Message: "msg from daemon " + tt.code})
		if !errors.Is(err, tt.want) {
			t.Errorf("FromDetail(%q) is %s, want %s", tt.code, catalog.ClassOf(err).Code, tt.want.Code)
		}
		if err.Error() != "msg from daemon "+tt.code {
			t.Errorf("FromDetail(%q) lost the message: %q", tt.code, err.Error())
		}
	}
}

func TestDetailRoundTrip(t *testing.T) {
	for _, c := range catalog.All() {
		orig := fmt.Errorf("doing something with /some/path: %w", c)
		back := catalog.FromDetail(catalog.ToDetail(orig))
		if !errors.Is(back, c) || back.Error() != orig.Error() || catalog.ExitCode(back) != c.Exit {
			t.Errorf("%s: round trip gave %v (class %s)", c.Code, back, catalog.ClassOf(back).Code)
		}
	}
	if catalog.ToDetail(nil) != nil || catalog.FromDetail(nil) != nil {
		t.Error("nil must map to nil")
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

// Every class has an HTTP status of its own kind, and a wrapped error
// keeps its code through ToProblem.
func TestHTTPStatus(t *testing.T) {
	for _, c := range catalog.All() {
		s := catalog.HTTPStatus(c)
		if s < 400 || s > 599 {
			t.Errorf("%s: HTTP status %d is not an error's", c.Code, s)
		}
	}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("x: %w", catalog.ErrBadInput), 400},
		{fmt.Errorf("x: %w", catalog.ErrUnknownTool), 404},
		{fmt.Errorf("x: %w", catalog.ErrPolicy), 403},
		{fmt.Errorf("x: %w", catalog.ErrSandbox), 503},
		{fmt.Errorf("x: %w", catalog.ErrTimeout), 504},
		{fmt.Errorf("x: %w", catalog.ErrUnknownEndpoint), 404},
		{fmt.Errorf("x: %w", catalog.ErrBodyTooLarge), 413},
		{fmt.Errorf("x: %w", catalog.ErrNoCall), 404},
		{errors.New("unclassified"), 500},
	} {
		p := catalog.ToProblem(tc.err)
		if p.Status != tc.want || p.Code != catalog.ClassOf(tc.err).Code || p.Type != "urn:contextd:error:"+p.Code || p.Detail != tc.err.Error() {
			t.Errorf("%v: %+v, want status %d", tc.err, p, tc.want)
		}
	}
	for c, want := range map[*catalog.Class]int{
		catalog.ErrUnknownEndpoint: 404, catalog.ErrBodyTooLarge: 413, catalog.ErrToken: 401,
		catalog.ErrHostRefused: 403, catalog.ErrHookSignature: 401, catalog.ErrHookReplay: 409,
		catalog.ErrHookTimestamp: 401, catalog.ErrRateLimited: 429, catalog.ErrUnknownAutomation: 404,
		catalog.ErrNoCall: 404,
	} {
		if got := catalog.HTTPStatus(c); got != want {
			t.Errorf("%s: HTTP status %d, want %d", c.Code, got, want)
		}
	}
	if catalog.ToProblem(nil) != nil {
		t.Error("ToProblem(nil) is not nil")
	}
}
