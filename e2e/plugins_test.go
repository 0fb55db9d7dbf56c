//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The plugins' configuration: the probe's one host is allowed, fetches are
// bounded small enough that the bomb trips them, and an idle instance
// lasts the whole test.
const pluginsConfig = `[plugins]
allow_egress = ["allowed.invalid"]
fetch_max_bytes = "64MiB"
idle_stop = "10m"
`

// Plugin tools end to end: a Go tool installed from a local git repository
// (built in its sandbox from its vendored tree), a Python tool from an HTTP
// archive on the host's loopback and a hostile probe from a directory, each
// then called through its symlink and over MCP with the real TypeScript SDK
// client, scrubbed, paged and audited; the probe's reads, writes and
// fetches refused; kill -9 mid-call survived; a burst of 50 calls; and the
// archives and pins an install must refuse, refused.
func TestPluginTools(t *testing.T) {
	withConfig(t, pluginsConfig)
	contextd := filepath.Join(env.bin, "contextd")
	t.Cleanup(func() {
		for _, n := range []string{"smoke", "logscan", "probe", "lsv"} {
			runAs(t, env.home, nil, "", contextd, "tool", "remove", n)
		}
		userSh(t, "rm -rf ~/src-smoke ~/src-probe ~/.local/share/contextd/tools ~/.local/state/contextd/tools-enabled.json ~/proj/plugin-*")
		// The project's tool directory without the plugin tools again.
		runAs(t, "", nil, "", filepath.Join(env.bin, "contextd-proxy"), "install", "--agent", "none")
	})
	archives := serveArchives(t)

	t.Run("install", func(t *testing.T) {
		src := gitSmoke(t)
		source := "git::file://" + src + "?ref=v1"
		r := runAs(t, env.home, nil, "", contextd, "tool", "install", source)
		if r.code != 77 || !strings.Contains(r.stdout+r.stderr, "CTXD-E094") {
			t.Fatalf("install without --yes and without a terminal: %s", r)
		}
		mustContain(t, "the permissions shown before the refusal", r.stdout+r.stderr, "no access to the workspace")
		mustCode(t, runAs(t, env.home, nil, "", contextd, "tool", "install", source, "--yes"), 0)
		mustCode(t, runAs(t, env.home, nil, "", contextd, "tool", "install", archives.URL+"/logscan.tar.gz", "--yes"), 0)
		probe := probeSource(t)
		mustCode(t, runAs(t, env.home, nil, "", contextd, "tool", "install", probe, "--yes"), 0)

		list := runAs(t, env.home, nil, "", contextd, "tool", "list", "--json")
		mustCode(t, list, 0)
		for _, want := range []string{`"smoke"`, `"logscan"`, `"probe"`, `"git:`, `"sha256:`} {
			mustContain(t, "tool list --json", list.stdout, want)
		}
		mustCode(t, runAs(t, "", nil, "", filepath.Join(env.bin, "contextd-proxy"), "install", "--agent", "none"), 0)
		for _, n := range []string{"smoke", "logscan", "probe"} {
			if _, err := os.Lstat(filepath.Join(env.project, ".claude", "tools", n, n)); err != nil {
				t.Errorf("no symlink of %s: %v", n, err)
			}
		}
		st := runAs(t, "", nil, "", contextd, "status", "--no-sandbox-check")
		mustContain(t, "contextd status", st.stdout, "3 plugin tool(s) installed", "smoke", "logscan", "probe")
	})
	if t.Failed() {
		return
	}

	t.Run("symlink", func(t *testing.T) {
		r := tool(t, "smoke", "", "--text", "hello from smoke")
		mustCode(t, r, 0)
		mustContain(t, "smoke", r.stdout, "hello from smoke")
		writeProjectFile(t, "plugin-app.log", "start\nERROR db timeout after 30s\nok\nERROR db timeout after 31s\n")
		r = tool(t, "logscan", "", "--path", "plugin-app.log")
		mustCode(t, r, 0)
		mustContain(t, "logscan", r.stdout, "plugin-app.log:2: ERROR db timeout after 30s", "plugin-app.log:4: ERROR db timeout after 31s")
	})

	t.Run("mcp", func(t *testing.T) {
		c := startMCP(t)
		list := c.do(map[string]any{"op": "list"})
		seen := map[string]bool{}
		for _, tl := range list.Tools {
			seen[tl.Name] = true
		}
		if !seen["smoke"] || !seen["logscan"] || !seen["probe"] || !seen["safe_bash"] {
			t.Fatalf("tools/list over MCP lacks a plugin tool: %v", seen)
		}
		c.mustOK("smoke", map[string]any{"text": "over mcp"}, "over mcp")
		c.mustOK("logscan", map[string]any{"path": "plugin-app.log"}, "ERROR db timeout")
	})

	t.Run("scrub-pages-audit", func(t *testing.T) {
		_, secrets := plantedSecrets(t)
		r := tool(t, "smoke", "", "--text", "aws_access_key_id = "+secrets[0]+" token "+secrets[1])
		mustCode(t, r, 0)
		noSecrets(t, "smoke's output", r.stdout, secrets[:2])

		const n = 5000
		first := jsonTool(t, nil, "smoke", "", "--lines", strconv.Itoa(n))
		if !first.Truncated || first.Continue == "" {
			t.Fatalf("5000 lines were not cut to the budget: truncated %v, continue %q", first.Truncated, first.Continue)
		}
		pages := pageThrough(t, nil, "smoke", first.Continue, 200)
		var all strings.Builder
		for _, p := range pages {
			all.WriteString(p.Data)
		}
		var want strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&want, "line %d of %d\n", i, n)
		}
		if !strings.HasPrefix(all.String(), want.String()) {
			t.Errorf("the pages (%d, %d bytes) do not put the 5000 lines back together", len(pages), all.Len())
		}

		a := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "audit", "tail", "-n", "50", "--json")
		mustCode(t, a, 0)
		found := false
		for _, line := range strings.Split(a.stdout, "\n") {
			var rec struct {
				Tool   string
				Plugin *struct{ Version, Source, Resolved, Checksum string }
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Tool == "smoke" && rec.Plugin != nil {
				found = rec.Plugin.Version == "1.0.0" && strings.HasPrefix(rec.Plugin.Checksum, "sha256:") && strings.HasPrefix(rec.Plugin.Resolved, "git:")
			}
			for _, sec := range secrets[:2] {
				if strings.Contains(line, sec) {
					t.Errorf("the audit log holds a planted secret: %s", line)
				}
			}
		}
		if !found {
			t.Errorf("no audit record of smoke with its version, pin and checksum:\n%s", a.stdout)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		key := "-----BEGIN OPENSSH PRIVATE KEY-----\nplugin-e2e-not-a-key\n"
		userSh(t, "mkdir -p ~/.ssh && printf %s "+shq(key)+" > ~/.ssh/id_plugin_e2e")
		t.Cleanup(func() { userSh(t, "rm -f ~/.ssh/id_plugin_e2e ~/plugin-outside.txt") })
		r := tool(t, "probe", "", "--op", "read", "--path", filepath.Join(env.home, ".ssh", "id_plugin_e2e"))
		mustContain(t, "probe reading ~/.ssh", r.stdout, "read refused: ENOENT")
		if strings.Contains(r.stdout, "plugin-e2e-not-a-key") {
			t.Fatalf("the probe read the key:\n%s", r.stdout)
		}
		// The sandbox's $HOME is an empty tmpfs of its own: a write there
		// may succeed, and must not land in the user's home.
		tool(t, "probe", "", "--op", "write", "--path", filepath.Join(env.home, "plugin-outside.txt"))
		if _, err := os.Stat(filepath.Join(env.home, "plugin-outside.txt")); err == nil {
			t.Fatal("the probe's write outside the workspace landed on the host")
		}
		for _, p := range []string{"/etc/plugin-e2e", "/usr/plugin-e2e", filepath.Join(env.bin, "plugin-e2e")} {
			r = tool(t, "probe", "", "--op", "write", "--path", p)
			if !strings.Contains(r.stdout, "write refused: EROFS") && !strings.Contains(r.stdout, "write refused: ENOENT") && !strings.Contains(r.stdout, "write refused: EACCES") {
				t.Errorf("probe writing %s: %s", p, r)
			}
			if _, err := os.Stat(p); err == nil {
				os.Remove(p)
				t.Errorf("the probe's write to %s landed on the host", p)
			}
		}
		r = tool(t, "probe", "", "--op", "fetch", "--url", "http://unlisted.invalid/")
		mustContain(t, "probe fetching an unlisted host", r.stdout, "fetch refused: 403", "contextd egress: refused unlisted.invalid:80")
		// Inside the workspace it may write.
		r = tool(t, "probe", "", "--op", "write", "--path", "plugin-inside.txt")
		mustContain(t, "probe writing in the workspace", r.stdout, "write ok")
	})

	t.Run("kill-9", func(t *testing.T) {
		mark := filepath.Join(env.project, "plugin-sleeping")
		os.Remove(mark)
		link := filepath.Join(env.project, ".claude", "tools", "probe", "probe")
		cmd := exec.Command("bash", env.usermgr, "run", testUser, "-C", env.project, "--", link, "--op", "sleep", "--path", "plugin-sleeping", "--seconds", "90")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pid int
		waitFor(t, time.Minute, "the probe's sleeping call to start", func() bool {
			b, err := os.ReadFile(mark)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && pid > 0
		})
		// The pid is the sandbox's; the host's is found by the program's path.
		host := strings.Fields(execute(t, "", "pgrep", "-u", testUser, "-f", "probe.py").stdout)
		if len(host) == 0 {
			t.Fatal("no probe.py process of the test user")
		}
		for _, p := range host {
			execute(t, "", "kill", "-9", p)
		}
		err := cmd.Wait()
		if err == nil || !strings.Contains(out.String(), "CTXD-E091") || !strings.Contains(out.String(), "signal 9") {
			t.Fatalf("the killed call: %v\n%s", err, out.String())
		}
		st := runAs(t, "", nil, "", filepath.Join(env.bin, "contextd"), "status", "--no-sandbox-check")
		mustContain(t, "status after the kill", st.stdout, "daemon:   active")
		r := tool(t, "probe", "", "--op", "echo", "--text", "alive again")
		mustCode(t, r, 0)
		mustContain(t, "the call after the kill", r.stdout+r.stderr, "alive again", "ended")
	})

	t.Run("burst-50", func(t *testing.T) {
		dir := filepath.Join(env.project, "plugin-burst")
		r := runAs(t, "", nil, "", "bash", "-c", `set -u
d=$1; link=$2
rm -rf "$d" && mkdir "$d"
for i in $(seq 1 50); do
  ( "$link" --text "out-$i" >"$d/$i.out" 2>"$d/$i.err"; echo $? >"$d/$i.code" ) &
done
wait`, "burst", dir, filepath.Join(env.project, ".claude/tools/smoke/smoke"))
		mustCode(t, r, 0)
		for i := 1; i <= 50; i++ {
			code, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.code", i)))
			o, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.out", i)))
			e, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.err", i)))
			if strings.TrimSpace(string(code)) != "0" || !strings.Contains(string(o), fmt.Sprintf("out-%d\n", i)) {
				t.Errorf("call %d: exit %s, stdout %q, stderr %q", i, strings.TrimSpace(string(code)), o, e)
			}
		}
	})

	t.Run("install-refusals", func(t *testing.T) {
		for _, c := range []struct{ path, code, names string }{
			{"/slip.tar.gz", "CTXD-E092", "../"},
			{"/link.tar.gz", "CTXD-E092", "planted-link"},
			{"/bomb.tar.gz", "CTXD-E092", ""},
		} {
			r := runAs(t, env.home, nil, "", contextd, "tool", "install", archives.URL+c.path, "--name", "bad", "--yes")
			if r.code == 0 || !strings.Contains(r.stdout+r.stderr, c.code) || !strings.Contains(r.stdout+r.stderr, c.names) {
				t.Errorf("%s: want %s naming %q, got %s", c.path, c.code, c.names, r)
			}
		}
		if _, err := os.Stat(filepath.Join(env.home, "x")); err == nil {
			t.Error("the zip-slip archive wrote outside its tree")
		}
		mustCode(t, runAs(t, env.home, nil, "", contextd, "tool", "install", archives.URL+"/moving.tar.gz", "--name", "lsv", "--yes"), 0)
		archives.move()
		r := runAs(t, env.home, nil, "", contextd, "tool", "update", "lsv", "--yes")
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "CTXD-E093") {
			t.Errorf("update after the archive changed: %s", r)
		}
		l := runAs(t, env.home, nil, "", contextd, "tool", "list", "--json")
		if strings.Contains(l.stdout, `"bad"`) {
			t.Errorf("a refused install is listed:\n%s", l.stdout)
		}
	})
}

// gitSmoke makes a git repository of examples/tools/smoke in the test
// user's home, vendored so that its build needs no network, tagged v1.
func gitSmoke(t testing.TB) string {
	t.Helper()
	work := t.TempDir()
	dir := filepath.Join(work, "smoke")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(env.repo, "examples", "tools", "smoke"))); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(env.repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644)
	goEnv := append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	for _, argv := range [][]string{
		{"go", "mod", "init", "example.com/smoke"},
		{"go", "mod", "edit", "-replace", "github.com/contextd/contextd=" + env.repo},
		// -e: the tests of the dependencies' dependencies cannot be
		// looked up without a proxy; the build needs none of them.
		{"go", "mod", "tidy", "-e"},
		{"go", "mod", "vendor"},
	} {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, goEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	src := filepath.Join(env.home, "src-smoke")
	mustCode(t, execute(t, "", "bash", "-c", `rm -rf "$2" && cp -r "$1" "$2" && chown -R "$3:$3" "$2"`, "cp", dir, src, testUser), 0)
	mustCode(t, userSh(t, "cd ~/src-smoke && git init -q && git add -A && git -c user.email=e2e@invalid -c user.name=e2e commit -qm v1 && git tag v1"), 0)
	return src
}

// probeSource lays the probe out in the test user's home, with logscan's
// generated protocol modules beside it.
func probeSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(env.home, "src-probe")
	script := `rm -rf "$2" && mkdir "$2" && cp "$1"/e2e/plugintools/probe/* "$2"/ && cp "$1"/examples/tools/logscan-py/toolplugin_pb2*.py "$2"/ && chown -R "$3:$3" "$2"`
	mustCode(t, execute(t, "", "bash", "-c", script, "cp", env.repo, src, testUser), 0)
	return src
}

// archives is the HTTP server of the tools' archives, on the host's
// loopback: logscan, the hostile archives, and one whose body changes.
type archives struct {
	URL  string
	mu   sync.Mutex
	body []byte
}

// move changes the body served at /moving.tar.gz: the same tree and one
// file more, so another sha256 at the same URL.
func (a *archives) move() {
	b := tarGz(map[string]tarEntry{"moved.txt": {body: "moved"}}, filepath.Join(env.repo, "examples", "tools", "logscan-py"))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.body = b
}

func serveArchives(t *testing.T) *archives {
	t.Helper()
	logscan := filepath.Join(env.repo, "examples", "tools", "logscan-py")
	a := &archives{body: tarGz(nil, logscan)}
	files := map[string][]byte{
		"/logscan.tar.gz": tarGz(nil, logscan),
		"/slip.tar.gz":    tarGz(map[string]tarEntry{"../x": {body: "slipped"}}, logscan),
		"/link.tar.gz":    tarGz(map[string]tarEntry{"planted-link": {link: filepath.Join(env.home, ".ssh", "id_rsa")}}, logscan),
		"/bomb.tar.gz":    tarGz(map[string]tarEntry{"zeros": {size: 300 << 20}}, logscan),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moving.tar.gz" {
			a.mu.Lock()
			b := a.body
			a.mu.Unlock()
			w.Write(b)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// tarEntry is an extra entry of an archive: a file, a symbolic link, or a
// file of size zeros.
type tarEntry struct {
	body string
	link string
	size int64
}

// tarGz is the tree at dir as a tar.gz, with extra's entries after it.
func tarGz(extra map[string]tarEntry, dir string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	fail := func(err error) {
		if err != nil {
			panic(fmt.Sprintf("tar.gz of %s: %v", dir, err))
		}
	}
	fail(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		if err := tw.WriteHeader(&tar.Header{Name: rel, Mode: int64(info.Mode().Perm()), Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}))
	for name, e := range extra {
		switch {
		case e.link != "":
			fail(tw.WriteHeader(&tar.Header{Name: name, Linkname: e.link, Typeflag: tar.TypeSymlink, Mode: 0o777}))
		case e.size > 0:
			fail(tw.WriteHeader(&tar.Header{Name: name, Size: e.size, Typeflag: tar.TypeReg, Mode: 0o644}))
			zero := make([]byte, 1<<20)
			for n := int64(0); n < e.size; n += int64(len(zero)) {
				_, err := tw.Write(zero)
				fail(err)
			}
		default:
			fail(tw.WriteHeader(&tar.Header{Name: name, Size: int64(len(e.body)), Typeflag: tar.TypeReg, Mode: 0o644}))
			_, err := tw.Write([]byte(e.body))
			fail(err)
		}
	}
	fail(tw.Close())
	fail(gz.Close())
	return buf.Bytes()
}
