package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolfetch"
	"github.com/contextd/contextd/toolstore"
)

// TestToolApprover: the permissions are printed whatever the answer; --yes
// approves; stdin that is no terminal refuses with the approval code.
func TestToolApprover(t *testing.T) {
	perms := []string{"read the workspace", "connect to example.com:443"}
	for _, c := range []struct {
		name string
		yes  bool
		pipe bool
		want error
	}{
		{"yes", true, false, nil},
		{"a pipe answering y", false, true, catalog.ErrApproval},
		{"/dev/null", false, false, catalog.ErrApproval},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdin, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			if c.pipe {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				w.WriteString("y\n")
				w.Close()
				stdin = r
			}
			var out bytes.Buffer
			err = approver(c.yes, stdin, &out)("hello", perms, false)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("approve = %v, want %v", err, c.want)
			}
			for _, p := range perms {
				if !strings.Contains(out.String(), "  - "+p+"\n") {
					t.Errorf("%q not printed:\n%s", p, out.String())
				}
			}
		})
	}
}

func runTool(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"tool"}, args...), &out, &errOut)
	return out.String() + errOut.String(), code
}

// TestToolListRemove: list and remove work on the store's lock, with or
// without the daemon; an unknown name is not found.
func TestToolListRemove(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	s, err := toolstore.Default()
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runTool(t, "list"); code != 0 || !strings.Contains(out, "no plugin tools installed") {
		t.Fatalf("list of an empty store: %d %s", code, out)
	}
	if out, code := runTool(t, "remove", "nosuch"); code != catalog.ErrNotFound.Exit || !strings.Contains(out, catalog.ErrNotFound.Code) {
		t.Fatalf("remove of an unknown tool: %d %s", code, out)
	}
	// An entry as install leaves it, by hand.
	tool := &toolstore.Tool{Name: "hello", Version: "1.0", Source: "/src/hello", Resolved: "tree:" + strings.Repeat("a", 64),
		Checksum: "sha256:" + strings.Repeat("b", 64), Dir: "hello/bbbbbbbbbbbbbbbb", Installed: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	os.MkdirAll(filepath.Join(s.Path(tool), toolstore.TreeDir), 0o700)
	os.WriteFile(filepath.Join(s.Path(tool), toolstore.ApprovedName),
		[]byte("name = \"hello\"\ndescription = \"Says hello.\"\nschema = '{\"type\":\"object\"}'\n[run]\ncommand = [\"run.sh\"]\n"), 0o600)
	if err := s.Update(func(l *toolstore.Lock) error { l.Tools["hello"] = tool; return nil }); err != nil {
		t.Fatal(err)
	}
	out, code := runTool(t, "list")
	for _, want := range []string{"hello", "1.0", "/src/hello", tool.Resolved, tool.Checksum, "2026-01-02 03:04:05Z", "no access to the workspace"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("list: %d, %q missing:\n%s", code, want, out)
		}
	}
	out, code = runTool(t, "list", "--json")
	var listed []toolfetch.Listed
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 1 || listed[0].Checksum != tool.Checksum || len(listed[0].Permissions) == 0 {
		t.Fatalf("list --json: %d %v %s", code, err, out)
	}
	if out, code := runTool(t, "remove", "hello"); code != 0 || !strings.Contains(out, "removed hello") {
		t.Fatalf("remove: %d %s", code, out)
	}
	if _, err := os.Stat(s.Path(tool)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the tool's directory is left: %v", err)
	}
	if out, code := runTool(t, "install"); code != catalog.ErrUsage.Exit {
		t.Errorf("install without a source: %d %s", code, out)
	}
}
