package inside

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
	"github.com/contextd/contextd/internal/safeunpack"
)

// dirs makes a fetch's staging tree and scratch directory side by side
// under a parent whose other content the test checks stays empty.
func dirs(t *testing.T) (parent string, op toolsrc.Op) {
	t.Helper()
	parent = t.TempDir()
	op = toolsrc.Op{Dest: filepath.Join(parent, "stage"), Work: filepath.Join(parent, "work"), MaxBytes: 1 << 20, MaxFiles: 100, Timeout: time.Minute}
	for _, d := range []string{op.Dest, op.Work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return parent, op
}

// onlyStageAndWork fails unless parent holds nothing but the two
// directories the fetch was given.
func onlyStageAndWork(t *testing.T, parent string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "stage" && e.Name() != "work" {
			t.Errorf("%s appeared beside the staging directory", e.Name())
		}
	}
}

type member struct {
	name, link string
	typ        byte
	mode       int64
	body       string
	size       int64 // the header's size when not len(body)
}

func tarOf(t *testing.T, gz bool, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Linkname: m.link, Typeflag: m.typ, Mode: m.mode, Size: int64(len(m.body)), Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if m.size > 0 {
			h.Size = m.size
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.size > 0 {
			// A bomb: zeros, compressed to almost nothing.
			zero := make([]byte, 1<<20)
			for left := m.size; left > 0; left -= int64(len(zero)) {
				w.Write(zero[:min(left, int64(len(zero)))])
			}
		} else if _, err := w.Write([]byte(m.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, n := range names {
		f, err := w.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("planted\n"))
	}
	w.Close()
	return buf.Bytes()
}

// TestArchivesRefused fetches each attack archive twice, as a local file
// and over HTTP, and wants it refused as an install refusal naming its
// reason, with nothing written beside the staging directory.
func TestArchivesRefused(t *testing.T) {
	home, _ := os.UserHomeDir()
	many := []member{}
	for i := range 5 {
		many = append(many, member{name: "f" + string(rune('a'+i)), body: "x"})
	}
	cases := []struct {
		name  string
		data  func(t *testing.T) []byte
		want  error
		limit func(*toolsrc.Op)
	}{
		{"zip slip", func(t *testing.T) []byte { return zipOf(t, "ok.txt", "../x") }, safeunpack.ErrEscape, nil},
		{"symlink to ssh key", func(t *testing.T) []byte {
			return tarOf(t, false, member{name: "key", typ: tar.TypeSymlink, link: filepath.Join(home, ".ssh/id_rsa")})
		}, safeunpack.ErrLink, nil},
		{"hard link", func(t *testing.T) []byte {
			return tarOf(t, false, member{name: "a", body: "a"}, member{name: "b", typ: tar.TypeLink, link: "/etc/passwd"})
		}, safeunpack.ErrLink, nil},
		{"device", func(t *testing.T) []byte {
			return tarOf(t, false, member{name: "null", typ: tar.TypeChar})
		}, safeunpack.ErrSpecial, nil},
		{"tar.gz bomb", func(t *testing.T) []byte {
			return tarOf(t, true, member{name: "zeros", size: 300 << 20})
		}, safeunpack.ErrTooLarge, nil},
		{"too many files", func(t *testing.T) []byte { return tarOf(t, false, many...) }, safeunpack.ErrTooMany,
			func(op *toolsrc.Op) { op.MaxFiles = 3 }},
	}
	for _, c := range cases {
		data := c.data(t)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
		t.Cleanup(srv.Close)
		for _, via := range []string{"file", "http"} {
			t.Run(c.name+"/"+via, func(t *testing.T) {
				parent, op := dirs(t)
				if c.limit != nil {
					c.limit(&op)
				}
				if via == "file" {
					op.Source = filepath.Join(t.TempDir(), "src.archive")
					if err := os.WriteFile(op.Source, data, 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					op.Source = srv.URL + "/tool.tar.gz"
				}
				_, err := Fetch(context.Background(), op)
				if !errors.Is(err, catalog.ErrInstallRefused) || !errors.Is(err, c.want) {
					t.Fatalf("Fetch = %v, want %v and %v", err, catalog.ErrInstallRefused, c.want)
				}
				if catalog.ClassOf(err) != catalog.ErrInstallRefused {
					t.Errorf("class %v, want %v", catalog.ClassOf(err).Code, catalog.ErrInstallRefused.Code)
				}
				onlyStageAndWork(t, parent)
			})
		}
	}
}

// TestDownloadBounded: a body larger than fetch_max_bytes is cut and
// refused, whatever it holds.
func TestDownloadBounded(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 3<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) }))
	defer srv.Close()
	_, op := dirs(t)
	op.Source = srv.URL + "/big.tar"
	_, err := Fetch(context.Background(), op)
	if !errors.Is(err, catalog.ErrInstallRefused) || !errors.Is(err, safeunpack.ErrTooLarge) {
		t.Fatalf("Fetch = %v, want a size refusal", err)
	}
}

func TestArchiveFetched(t *testing.T) {
	data := tarOf(t, true, member{name: "tool/", typ: tar.TypeDir, mode: 0o755}, member{name: "tool/run.sh", mode: 0o4755, body: "#!/bin/sh\n"},
		member{name: "tool/sub/", typ: tar.TypeDir, mode: 0o755}, member{name: "tool/sub/a", body: "a"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(data) }))
	defer srv.Close()
	_, op := dirs(t)
	op.Source = srv.URL + "/x.tar.gz//tool"
	res, err := Fetch(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Resolved, "sha256:") || res.Files != 2 {
		t.Errorf("result %+v", res)
	}
	st, err := os.Stat(filepath.Join(op.Dest, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v: setuid not stripped", st.Mode())
	}
}

// TestLocalDirSetuidStripped copies a local directory with a setuid file.
func TestLocalDirSetuidStripped(t *testing.T) {
	src := t.TempDir()
	p := filepath.Join(src, "run")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if err := os.Chmod(p, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	_, op := dirs(t)
	op.Source = src
	if _, err := Fetch(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(op.Dest, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSetuid != 0 {
		t.Errorf("mode %v: setuid kept", st.Mode())
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestGitHardened clones a repository planted with what runs code through
// git: a post-checkout hook, core.fsmonitor in its own .git/config, and a
// submodule whose URL is an ext:: command. None of them may run (no marker
// file), .git is not copied out, and the resolved commit is the tag's.
func TestGitHardened(t *testing.T) {
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "pwned")
	repo := filepath.Join(tmp, "repo")
	os.Mkdir(repo, 0o755)
	git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "contextd-tool.toml"), []byte("name = \"x\"\n"), 0o644)
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	os.WriteFile(filepath.Join(repo, "sub", "a"), []byte("a"), 0o644)
	os.Symlink("/etc", filepath.Join(repo, "out"))
	os.WriteFile(filepath.Join(repo, ".gitmodules"), []byte("[submodule \"evil\"]\n\tpath = evil\n\turl = ext::sh -c touch% "+marker+"\n"), 0o644)
	git(t, repo, "add", "-A")
	// A gitlink for the submodule, as `git submodule add` writes it.
	git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",evil")
	git(t, repo, "commit", "-qm", "v1")
	git(t, repo, "tag", "v1")
	head := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "after")
	// Planted last: the test's own git commands above would run them.
	hook := "#!/bin/sh\ntouch " + marker + "\n"
	for _, h := range []string{"post-checkout", "post-merge", "pre-upload-pack", "reference-transaction"} {
		if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", h), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.WriteString("[core]\n\tfsmonitor = touch " + marker + "; false\n\thooksPath = .git/hooks\n[uploadpack]\n\tpackObjectsHook = touch " + marker + "; false\n")
	cfg.Close()
	// The plants work: git run in the repository itself does trip them.
	probe := exec.Command("git", "status")
	probe.Dir = repo
	probe.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	probe.Run()
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the planted fsmonitor did not run in the repository itself: the test proves nothing: %v", err)
	}
	os.Remove(marker)

	t.Run("tag", func(t *testing.T) {
		parent, op := dirs(t)
		op.Source = "git::file://" + repo + "?ref=v1"
		res, err := Fetch(context.Background(), op)
		if err != nil {
			t.Fatal(err)
		}
		if res.Resolved != "git:"+head {
			t.Errorf("resolved %q, want git:%s", res.Resolved, head)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a hook, fsmonitor or the ext:: submodule ran")
		}
		if _, err := os.Lstat(filepath.Join(op.Dest, ".git")); err == nil {
			t.Error(".git was copied out")
		}
		if st, err := os.Lstat(filepath.Join(op.Dest, "out")); err != nil || !st.Mode().IsRegular() {
			t.Errorf("the link in the repository: %v, %v; want a plain file (core.symlinks=false)", st, err)
		}
		onlyStageAndWork(t, parent)
	})
	t.Run("subdir", func(t *testing.T) {
		_, op := dirs(t)
		op.Source = "git::file://" + repo + "//sub?ref=v1"
		if _, err := Fetch(context.Background(), op); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(op.Dest, "a")); err != nil || string(b) != "a" {
			t.Errorf("sub/a: %q, %v", b, err)
		}
	})
	t.Run("bad ref", func(t *testing.T) {
		_, op := dirs(t)
		op.Source = "git::file://" + repo + "?ref=-x"
		if _, err := Fetch(context.Background(), op); !errors.Is(err, catalog.ErrBadInput) {
			t.Fatalf("Fetch = %v, want %v", err, catalog.ErrBadInput)
		}
	})
}

// TestSubdirLinkOut: a //subdir that is a symbolic link out of the tree is
// refused, not followed (CVE-2025-8959's class), for a local directory and
// a git checkout with core.symlinks left on by the repository's author.
func TestSubdirLinkOut(t *testing.T) {
	secret := t.TempDir()
	os.WriteFile(filepath.Join(secret, "id_rsa"), []byte("KEY"), 0o600)
	src := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(src, "sub")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(src, "real"), 0o755)
	os.Symlink(secret, filepath.Join(src, "real", "deeper"))
	for _, sub := range []string{"sub", "real/deeper"} {
		parent, op := dirs(t)
		op.Source = src + "//" + sub
		_, err := Fetch(context.Background(), op)
		if !errors.Is(err, catalog.ErrInstallRefused) || !errors.Is(err, safeunpack.ErrLink) {
			t.Fatalf("%s: Fetch = %v, want a link refusal", sub, err)
		}
		if _, err := os.Stat(filepath.Join(op.Dest, "id_rsa")); err == nil {
			t.Fatalf("%s: the key was copied", sub)
		}
		onlyStageAndWork(t, parent)
	}
}
