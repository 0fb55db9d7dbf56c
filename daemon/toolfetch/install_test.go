package toolfetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/sandbox"
	"github.com/contextd/contextd/daemon/sandboxenv"
	"github.com/contextd/contextd/toolstore"
)

const manifest = `name = "hello"
version = "%s"
description = "Says hello."
schema = "schema.json"
[run]
command = ["run.sh"]
[permissions]
workspace = "read-only"
`

// toolFiles is a trivial tool's tree: a shell script as its run command.
func toolFiles(version string) map[string]string {
	return map[string]string{
		"contextd-tool.toml": fmt.Sprintf(manifest, version),
		"schema.json":        `{"type":"object","properties":{"who":{"type":"string"}}}`,
		"TOOL.md":            "# hello\nSays hello.\n",
		"run.sh":             "#!/bin/sh\necho hello\n",
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	w := tar.NewWriter(zw)
	for name, body := range files {
		mode := int64(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		w.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg})
		w.Write([]byte(body))
	}
	w.Close()
	zw.Close()
	return buf.Bytes()
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// installer is an Installer over the real sandbox and egress proxy, its
// store, the proxy's CA and its runtime files in the test's directories.
func installer(t *testing.T) (*Installer, *[]string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(tmp, "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	cfg := config.Default()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	asked := &[]string{}
	in := &Installer{Store: toolstore.Store{Root: filepath.Join(tmp, "store")}, Config: cfg,
		Runner: &sandbox.Runner{ScopeNote: "the test runs without a user manager"}, Home: home,
		Approve: func(name string, perms []string, widened bool) error {
			*asked = append(*asked, fmt.Sprintf("%s widened=%v: %s", name, widened, strings.Join(perms, "; ")))
			return nil
		},
		Log: t.Logf}
	// Before the temporary directory's own removal: the installed trees
	// are read-only.
	t.Cleanup(func() { toolstore.RemoveTree(in.Store.Root) })
	in.Net, in.NetErr = sandboxenv.NewNet(cfg, nil)
	if in.NetErr != nil {
		t.Fatalf("egress proxy: %v", in.NetErr)
	}
	return in, asked
}

// TestInstallGitAndHTTP installs a tool from a local git repository at a
// tag and from an archive on the host's loopback, both through the real
// sandbox, and checks the lock, the tree, the refusals of a moved pin, and
// list and remove.
func TestInstallGitAndHTTP(t *testing.T) {
	in, asked := installer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	repo := filepath.Join(t.TempDir(), "repo")
	os.Mkdir(repo, 0o755)
	gitIn(t, repo, "init", "-q")
	writeTree(t, repo, toolFiles("1.0"))
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-qm", "v1")
	gitIn(t, repo, "tag", "v1")
	commit := gitIn(t, repo, "rev-parse", "HEAD")

	out, err := in.Install(ctx, Request{Source: "git::file://" + repo + "?ref=v1", Name: "hello-git"})
	if err != nil {
		t.Fatalf("install from git: %v", err)
	}
	tl := out.Tool
	if tl.Resolved != "git:"+commit || tl.Ref != "v1" || tl.Version != "1.0" || tl.Source != "git::file://"+repo+"?ref=v1" {
		t.Errorf("lock entry %+v", tl)
	}
	if len(*asked) != 1 || !strings.Contains((*asked)[0], "read the workspace") {
		t.Errorf("approval asked %q", *asked)
	}
	tree := in.Store.Tree(tl)
	if err := in.Store.Verify(tl); err != nil {
		t.Errorf("verify: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "run.sh")); err != nil || !strings.Contains(string(b), "echo hello") {
		t.Errorf("run.sh: %q, %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(tree, "planted"), nil, 0o644); err == nil {
		t.Error("the installed tree is writable")
	}
	for _, f := range []string{toolstore.ApprovedName, toolstore.SchemaName, toolstore.DocName} {
		if _, err := in.Store.File(tl, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if m, err := in.Store.Approved(tl); err != nil || m.Name != "hello-git" {
		t.Errorf("approved manifest: %+v, %v", m, err)
	}

	// The tag moves: update refuses it, naming both commits, until the new
	// one is given.
	writeTree(t, repo, map[string]string{"run.sh": "#!/bin/sh\necho moved\n"})
	gitIn(t, repo, "commit", "-qam", "moved")
	gitIn(t, repo, "tag", "-f", "v1")
	moved := gitIn(t, repo, "rev-parse", "HEAD")
	_, err = in.Update(ctx, "hello-git", "")
	if !errors.Is(err, catalog.ErrChecksum) || !strings.Contains(err.Error(), commit) || !strings.Contains(err.Error(), moved) {
		t.Fatalf("update after the tag moved: %v, want %v naming both commits", err, catalog.ErrChecksum)
	}
	out, err = in.Update(ctx, "hello-git", "git:"+moved)
	if err != nil {
		t.Fatalf("update with the new commit: %v", err)
	}
	if out.Tool.Resolved != "git:"+moved || out.Tool.Checksum == tl.Checksum || len(out.Widened) != 0 {
		t.Errorf("updated entry %+v, widened %v", out.Tool, out.Widened)
	}
	if _, err := os.Stat(in.Store.Path(tl)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the previous version's directory is left: %v", err)
	}

	// The HTTP archive on the host's loopback, through the egress proxy.
	var body atomic.Value
	body.Store(tarGz(t, toolFiles("2.0")))
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write(body.Load().([]byte))
	}))
	defer srv.Close()
	out, err = in.Install(ctx, Request{Source: srv.URL + "/hello.tar.gz"})
	if err != nil {
		t.Fatalf("install from http: %v", err)
	}
	if hits.Load() == 0 {
		t.Error("the server saw no request")
	}
	sum := toolstore.SumBytes(body.Load().([]byte))
	if out.Tool.Name != "hello" || out.Tool.Resolved != sum {
		t.Errorf("http entry %+v, want resolved %s", out.Tool, sum)
	}
	body.Store(tarGz(t, toolFiles("2.1")))
	if _, err := in.Update(ctx, "hello", ""); !errors.Is(err, catalog.ErrChecksum) || !strings.Contains(err.Error(), sum) {
		t.Fatalf("update after the body changed: %v, want %v", err, catalog.ErrChecksum)
	}
	// install with a checksum= the body does not have.
	if _, err := in.Install(ctx, Request{Source: srv.URL + "/other.tar.gz?checksum=" + sum, Name: "other"}); !errors.Is(err, catalog.ErrChecksum) {
		t.Fatalf("install with a wrong checksum=: %v, want %v", err, catalog.ErrChecksum)
	}
	// The same name from another source.
	if _, err := in.Install(ctx, Request{Source: "git::file://" + repo + "?ref=v1", Name: "hello"}); !errors.Is(err, catalog.ErrUsage) {
		t.Fatalf("install over another source: %v, want %v", err, catalog.ErrUsage)
	}

	tools, err := List(in.Store)
	if err != nil || len(tools) != 2 || tools[0].Name != "hello" || tools[1].Name != "hello-git" || len(tools[0].Permissions) == 0 {
		t.Fatalf("list: %+v, %v", tools, err)
	}
	for _, n := range []string{"hello", "hello-git"} {
		gone, err := in.Remove(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(in.Store.Path(gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: its directory is left: %v", n, err)
		}
	}
	if tools, _ := List(in.Store); len(tools) != 0 {
		t.Errorf("after remove: %+v", tools)
	}
	if ents, _ := os.ReadDir(filepath.Join(in.Store.Root, stagingDir)); len(ents) != 0 {
		t.Errorf("staging directories left: %v", ents)
	}
}

// TestInstallRefusedInSandbox: an attack archive fetched in the sandbox is
// refused with its code and leaves nothing in the store.
func TestInstallRefusedInSandbox(t *testing.T) {
	in, _ := installer(t)
	ctx := context.Background()
	home, _ := os.UserHomeDir()
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	w.WriteHeader(&tar.Header{Name: "contextd-tool.toml", Mode: 0o644, Typeflag: tar.TypeSymlink, Linkname: filepath.Join(home, ".ssh/id_rsa")})
	w.Close()
	src := filepath.Join(t.TempDir(), "evil.tar")
	os.WriteFile(src, buf.Bytes(), 0o644)
	_, err := in.Install(ctx, Request{Source: src})
	if !errors.Is(err, catalog.ErrInstallRefused) || !strings.Contains(err.Error(), "contextd-tool.toml") {
		t.Fatalf("install of a link: %v, want %v naming the entry", err, catalog.ErrInstallRefused)
	}
	if l, err := in.Store.Load(); err != nil || len(l.Tools) != 0 {
		t.Errorf("lock after a refusal: %+v, %v", l, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(in.Store.Root, stagingDir)); len(ents) != 0 {
		t.Errorf("staging directories left: %v", ents)
	}
}

// TestUpdateWidening: an update whose manifest asks for more is approved
// again, shown only what is new; one that asks for no more applies
// without asking.
func TestUpdateWidening(t *testing.T) {
	in, asked := installer(t)
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "tool")
	writeTree(t, src, toolFiles("1"))
	if _, err := in.Install(ctx, Request{Source: src}); err != nil {
		t.Fatal(err)
	}
	writeTree(t, src, map[string]string{"contextd-tool.toml": strings.Replace(fmt.Sprintf(manifest, "2"), "read-only", "read-write", 1)})
	out, err := in.Update(ctx, "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(*asked) != 2 || !strings.Contains((*asked)[1], "widened=true: read and write the workspace") || strings.Contains((*asked)[1], "memory") {
		t.Errorf("the widening update asked %q", *asked)
	}
	if out.Tool.Version != "2" {
		t.Errorf("updated to %+v", out.Tool)
	}
	writeTree(t, src, map[string]string{"contextd-tool.toml": strings.Replace(fmt.Sprintf(manifest, "3"), "read-only", "none", 1)})
	if out, err = in.Update(ctx, "hello", ""); err != nil || out.Tool.Version != "3" {
		t.Fatalf("narrowing update: %+v, %v", out, err)
	}
	if len(*asked) != 2 {
		t.Errorf("a narrowing update asked again: %q", *asked)
	}
	// Refused at the question: nothing changes.
	writeTree(t, src, map[string]string{"contextd-tool.toml": fmt.Sprintf(manifest, "4")})
	in.Approve = func(string, []string, bool) error { return catalog.ErrApproval }
	if _, err := in.Update(ctx, "hello", ""); !errors.Is(err, catalog.ErrApproval) {
		t.Fatalf("refused update: %v", err)
	}
	if l, _ := in.Store.Load(); l.Tools["hello"].Version != "3" {
		t.Errorf("a refused update changed the lock: %+v", l.Tools["hello"])
	}
}
