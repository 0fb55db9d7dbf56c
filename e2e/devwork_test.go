//go:build e2e

package e2e

// Real development work through safe_bash (issue 16, "Done when"): real
// suites run bare and through the sandbox, as the unprivileged test user with
// the real user manager and the suite's configuration (which leaves [home] at
// its defaults), must give the same result; git commits with the identity of
// the user's ~/.gitconfig; and a sandboxed build leaves the user's own
// toolchain caches exactly as they were, checked from outside.
//
// The projects are real: a Go module from the module proxy with its own test
// suite and dependencies, and two small projects of e2e/devprojects, one of
// them tested by a dev dependency from the npm registry. Their dependencies
// are fetched once per run, outside the sandbox, into the test user's own
// caches, which every test of this file then shares: that is the state a
// developer's machine is in when an agent starts working. Each run starts
// from caches it emptied itself, never from what an earlier run left.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// devGoModule is the Go module whose suite runs bare and inside: small, with
// real dependencies (pflag, go-md2man, yaml.v3, mousetrap), and a suite that
// depends on neither timing nor the network.
const devGoModule = "github.com/spf13/cobra@v1.8.1"

// dev is what devSetup prepared once for this run.
type devState struct {
	tag     string // this run's, in every name and marker
	root    string // ~/devwork-TAG, the test user's
	goDir   string // a copy of devGoModule, its dependencies in the user's module cache
	nodeDir string // e2e/devprojects/node, node_modules installed by npm
	pyDir   string // e2e/devprojects/python
	goBare  result // `go test ./...` in goDir, bare, right after the download
	npmBare result // `npm test` in nodeDir, bare
}

var (
	devOnce   sync.Once
	devShared *devState
	devErr    error
)

// devSetup prepares the projects and the test user's caches once per run,
// and returns them.
func devSetup(t testing.TB) *devState {
	t.Helper()
	devOnce.Do(func() { devShared, devErr = prepareDev() })
	if devErr != nil {
		t.Fatalf("preparing the development projects: %v", devErr)
	}
	return devShared
}

// devTag returns n random lower-case letters and digits.
func devTag(n int) string {
	const set = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	for i := range b {
		b[i] = set[int(b[i])%len(set)]
	}
	return string(b)
}

// devUserCaches are the test user's own toolchain caches and settings that
// this file fills and checks, relative to the home: the defaults, since the
// user's environment sets no GOPATH, GOCACHE or npm_config_cache.
var devUserCaches = []string{"go", ".cache/go-build", ".npm", ".config/go", ".gitconfig", ".config/git", ".cache/contextd"}

func prepareDev() (*devState, error) {
	s := &devState{tag: devTag(8)}
	s.root = filepath.Join(env.home, "devwork-"+s.tag)

	// A clean slate: no daemon holding a layer, none of the caches, git
	// settings or projects an earlier run left.
	if r := userSh(nil, "systemctl --user stop contextd.service"); r.code != 0 {
		return nil, fmt.Errorf("stopping contextd: %s", r)
	}
	old, _ := filepath.Glob(filepath.Join(env.home, "devwork-*"))
	for _, rel := range devUserCaches {
		old = append(old, filepath.Join(env.home, rel))
	}
	for _, p := range old {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
	}

	if _, err := devMkdirAll(s.root); err != nil {
		return nil, err
	}

	// The Go module, from the module proxy into the user's module cache, as
	// the user, then copied to a workspace; its dependencies downloaded and
	// its suite run once outside, which fills the build cache.
	r := runAs(nil, s.root, devGoVars(), "", "go", "mod", "download", "-json", devGoModule)
	if r.code != 0 {
		return nil, fmt.Errorf("go mod download %s: %s", devGoModule, r)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(r.stdout), &mod); err != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download -json %s: %v %s\n%s", devGoModule, err, mod.Error, r)
	}
	s.goDir = filepath.Join(s.root, "go-cobra")
	r = runAs(nil, s.root, devGoVars(), "", "bash", "-c", fmt.Sprintf(
		"set -e; cp -r %s %s; chmod -R u+w %s; cd %s; git init -q; go mod download", shq(mod.Dir), shq(s.goDir), shq(s.goDir), shq(s.goDir)))
	if r.code != 0 {
		return nil, fmt.Errorf("copying %s and downloading its dependencies: %s", devGoModule, r)
	}
	s.goBare = runAs(nil, s.goDir, devGoVars(), "", "bash", "-c", "go test ./... 2>&1")

	// The Node package: `npm install` fetches mocha and its dependencies
	// from the registry into ~/.npm and node_modules.
	s.nodeDir = filepath.Join(s.root, "node-durations")
	if err := devCopyFixture("node", s.nodeDir); err != nil {
		return nil, err
	}
	if r := runAs(nil, s.nodeDir, nil, "", "bash", "-c", "npm install --no-audit --no-fund 2>&1"); r.code != 0 {
		return nil, fmt.Errorf("npm install in %s: %s", s.nodeDir, r)
	}
	s.npmBare = runAs(nil, s.nodeDir, nil, "", "bash", "-c", "npm test 2>&1")

	s.pyDir = filepath.Join(s.root, "py-shelf")
	if err := devCopyFixture("python", s.pyDir); err != nil {
		return nil, err
	}
	return s, nil
}

const devGitName = "Ada Lovelace"

// devGitConfig gives the test user git settings as a developer has them, for
// one test: identity and an alias in ~/.gitconfig, another alias and a
// global ignore rule in $XDG_CONFIG_HOME/git. They are removed after the
// test: the git preset shows them to every call, and other tests of the
// suite expect the home the harness made.
func devGitConfig(t *testing.T, s *devState) {
	t.Helper()
	files := map[string]string{
		".gitconfig": "[user]\n\tname = " + devGitName + "\n\temail = " + devGitEmail(s.tag) + "\n" +
			"[init]\n\tdefaultBranch = main\n[alias]\n\tlast = log -1 --format=%s\n",
		".config/git/config": "[alias]\n\tctxdshort = log --oneline\n",
		".config/git/ignore": "*.ctxdtmp\n",
	}
	t.Cleanup(func() {
		os.Remove(filepath.Join(env.home, ".gitconfig"))
		os.RemoveAll(filepath.Join(env.home, ".config", "git"))
	})
	for rel, content := range files {
		if err := devWriteFile(filepath.Join(env.home, rel), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func devGitEmail(tag string) string { return "ada." + tag + "@example.org" }

// devGoVars passes the machine's Go module settings to the go command run as
// the test user (its environment is otherwise clean).
func devGoVars() []string {
	var out []string
	for _, k := range []string{"GOPROXY", "GOSUMDB", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOINSECURE"} {
		if v := os.Getenv(k); v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// devMkdirAll makes dir and its missing parents, owned by the test user, and
// returns the topmost directory it made ("" if it made none).
func devMkdirAll(dir string) (string, error) {
	var missing []string
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	top := ""
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			return top, err
		}
		if err := os.Chown(missing[i], env.uid, env.uid); err != nil {
			return top, err
		}
		if top == "" {
			top = missing[i]
		}
	}
	return top, nil
}

// devWriteFile writes a file of the test user's, making its directory.
func devWriteFile(p, content string, mode os.FileMode) error {
	if _, err := devMkdirAll(filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		return err
	}
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	return os.Chown(p, env.uid, env.uid)
}

// devCopyFixture copies e2e/devprojects/NAME to dst as the test user's (what
// a run of the fixture wrote into the repository, node_modules or bytecode,
// is left out) and makes it a git repository of its own.
func devCopyFixture(name, dst string) error {
	src := filepath.Join(env.repo, "e2e", "devprojects", name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "__pycache__") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			_, err := devMkdirAll(out)
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return devWriteFile(out, string(b), 0o644)
	})
	if err != nil {
		return err
	}
	if r := runAs(nil, dst, nil, "", "git", "init", "-q"); r.code != 0 {
		return fmt.Errorf("git init %s: %s", dst, r)
	}
	return nil
}

// devBox runs script through the installed safe_bash symlink, from dir, with
// room for a build.
func devBox(t testing.TB, dir string, vars []string, script string) result {
	t.Helper()
	link := filepath.Join(env.project, ".claude", "tools", "safe_bash", "safe_bash")
	return runAs(t, dir, vars, "", link, "--timeout", "600", script)
}

// devBare runs script as the test user, outside the sandbox, from dir, with
// its stderr in its stdout (as safe_bash returns them).
func devBare(t testing.TB, dir string, vars []string, script string) result {
	t.Helper()
	return runAs(t, dir, vars, "", "bash", "-c", "{ "+script+"\n} 2>&1")
}

// goPackageLines are the verdicts of `go test` per package ("ok pkg",
// "FAIL pkg", "? pkg"), sorted, without timings or "(cached)".
func goPackageLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "ok" || f[0] == "FAIL" || f[0] == "?") {
			lines = append(lines, f[0]+" "+f[1])
		}
	}
	sort.Strings(lines)
	return lines
}

var (
	mochaCount = regexp.MustCompile(`(?m)^\s*(\d+ (?:passing|failing|pending))\b`)
	mochaTest  = regexp.MustCompile(`(?m)^\s*(✔|✓|\d+\)) (.+?)(?: \(\d+ms\))?$`)
)

// mochaResult is what a mocha run reported: its counts and each test's title
// with its mark, sorted.
func mochaResult(out string) []string {
	var lines []string
	for _, m := range mochaCount.FindAllStringSubmatch(out, -1) {
		lines = append(lines, m[1])
	}
	for _, m := range mochaTest.FindAllStringSubmatch(out, -1) {
		mark := "pass"
		if m[1] != "✔" && m[1] != "✓" {
			mark = "fail"
		}
		lines = append(lines, mark+": "+m[2])
	}
	sort.Strings(lines)
	return lines
}

var (
	unittestCase = regexp.MustCompile(`(?m)^(test\S*) \((\S+)\) \.\.\. (.+)$`)
	unittestRan  = regexp.MustCompile(`(?m)^Ran (\d+) tests?`)
	unittestEnd  = regexp.MustCompile(`(?m)^(OK|FAILED)\b.*$`)
)

// unittestResult is what `python3 -m unittest -v` reported: each test and its
// verdict, the count and the final line, sorted.
func unittestResult(out string) []string {
	var lines []string
	for _, m := range unittestCase.FindAllStringSubmatch(out, -1) {
		lines = append(lines, m[2]+"."+m[1]+": "+m[3])
	}
	for _, m := range unittestRan.FindAllStringSubmatch(out, -1) {
		lines = append(lines, "ran "+m[1])
	}
	for _, m := range unittestEnd.FindAllString(out, -1) {
		lines = append(lines, "end "+strings.TrimSpace(m))
	}
	sort.Strings(lines)
	return lines
}

// sameRun fails t unless the sandboxed run ended as the bare one did: the
// same exit status and the same verdicts. The bare run must have passed: a
// suite that fails on this machine bare says nothing about the sandbox.
func sameRun(t *testing.T, what string, bare, boxed result, verdicts func(string) []string) {
	t.Helper()
	t.Logf("%s: bare exit %d in %s, through safe_bash exit %d in %s", what, bare.code, bare.elapsed.Round(1e6), boxed.code, boxed.elapsed.Round(1e6))
	if bare.code != 0 {
		t.Fatalf("%s fails bare on this machine, so the fixture is broken, not the sandbox: %s", what, bare)
	}
	want := verdicts(bare.stdout)
	if len(want) == 0 {
		t.Fatalf("%s: no verdict found in the bare run's output:\n%s", what, bare.stdout)
	}
	got := verdicts(boxed.stdout + boxed.stderr)
	if boxed.code != bare.code || !slices.Equal(got, want) {
		t.Fatalf("%s through safe_bash differs from bare:\nbare (exit %d):\n  %s\nsafe_bash (exit %d):\n  %s\nsafe_bash output:\n%s",
			what, bare.code, strings.Join(want, "\n  "), boxed.code, strings.Join(got, "\n  "), boxed)
	}
}

// A Go module with real dependencies from the module proxy: its suite, run
// through safe_bash, ends as it does bare. The dependencies are in the
// user's module cache (downloaded outside) and the network is off inside:
// the run works only if the cache is shown.
func TestDevGoModuleTests(t *testing.T) {
	s := devSetup(t)
	boxed := devBox(t, s.goDir, nil, "go test ./...")
	sameRun(t, "go test ./... of "+devGoModule, s.goBare, boxed, goPackageLines)
}

// A Node package tested by a dev dependency from the npm registry: `npm
// test` through safe_bash ends as it does bare. Then a copy of the package
// without node_modules installs through safe_bash from the user's npm cache
// alone (`npm ci --offline`: the network is off inside), and its suite
// passes: the cache is shown, and reused.
func TestDevNodePackageTests(t *testing.T) {
	s := devSetup(t)
	boxed := devBox(t, s.nodeDir, nil, "npm test")
	sameRun(t, "npm test", s.npmBare, boxed, mochaResult)

	dir := filepath.Join(s.root, "node-ci-"+devTag(6))
	if err := devCopyFixture("node", dir); err != nil {
		t.Fatal(err)
	}
	ci := devBox(t, dir, nil, "npm ci --offline --no-audit --no-fund && npm test")
	if ci.code != 0 {
		t.Fatalf("npm ci --offline and npm test through safe_bash, from the user's npm cache: %s", ci)
	}
	if got, want := mochaResult(ci.stdout), mochaResult(s.npmBare.stdout); !slices.Equal(got, want) {
		t.Fatalf("npm test after npm ci --offline: %q, bare %q\n%s", got, want, ci)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "mocha", "package.json")); err != nil {
		t.Fatalf("npm ci --offline through safe_bash left no node_modules/mocha in the workspace: %v", err)
	}
}

// A Python project's unittest suite (temporary files, a child interpreter,
// the package's own data) ends through safe_bash as it does bare.
func TestDevPythonUnittest(t *testing.T) {
	s := devSetup(t)
	bare := devBare(t, s.pyDir, nil, "python3 -m unittest -v")
	boxed := devBox(t, s.pyDir, nil, "python3 -m unittest -v")
	sameRun(t, "python3 -m unittest", bare, boxed, unittestResult)
}

// git through safe_bash, as a developer uses it: a commit takes the identity
// of the user's ~/.gitconfig; diff, the global ignore rules, branch, switch,
// stash, log, the user's aliases and worktree work; and what was committed
// inside is in the repository outside.
func TestDevGitCommit(t *testing.T) {
	s := devSetup(t)
	devGitConfig(t, s)
	tag := devTag(6)
	dir := filepath.Join(s.root, "git-"+tag)
	mustCode(t, devBare(t, s.root, nil, "set -e; mkdir "+shq(dir)+"; cd "+shq(dir)+
		"; git init -q; printf 'first line\\n' > README; git add README; git commit -q -m initial"), 0)
	identity := devGitName + " <" + devGitEmail(s.tag) + ">"

	// Each step prints "STEP name rc=N"; every rc must be 0.
	script := `step() { name=$1; shift; "$@"; echo "STEP $name rc=$?"; }
printf 'second line\n' >> README
step diff-stat git diff --stat
git diff | grep -q '^+second line' ; echo "STEP diff-content rc=$?"
echo scratch > build.ctxdtmp
git status --porcelain > status.out; echo "STEP status rc=$?"
grep -q ctxdtmp status.out; echo "STEP ignored rc=$((1-$?))"
rm -f status.out
step add git add README
step commit git commit -q -m "inside the sandbox ` + tag + `"
echo "AUTHOR $(git log -1 --format='%an <%ae>|%s')"
echo "COMMITTER $(git log -1 --format='%cn <%ce>|%s')"
echo "ALIAS-LAST $(git last)"
step branch git branch feature-` + tag + `
step switch git switch -q feature-` + tag + `
echo feature > feature.txt
step feature-commit sh -c 'git add feature.txt && git commit -q -m "feature ` + tag + `"'
step switch-back git switch -q main
printf 'work in progress\n' >> README
step stash git stash push -q -m "wip ` + tag + `"
echo "STASHED $(git stash list | head -1)"
test -z "$(git status --porcelain --untracked-files=no)"; echo "STEP stash-clean rc=$?"
step stash-pop git stash pop -q
grep -q 'work in progress' README; echo "STEP stash-restored rc=$?"
step checkout git checkout -q -- README
echo "LOG $(git ctxdshort --all | wc -l)"
step worktree git worktree add -q wt-` + tag + ` feature-` + tag + `
echo "WORKTREE $(git -C wt-` + tag + ` log -1 --format=%s)"
step worktree-remove git worktree remove wt-` + tag + `
`
	r := devBox(t, dir, nil, script)
	out := r.stdout + r.stderr
	for _, m := range regexp.MustCompile(`(?m)^STEP (\S+) rc=(\d+)$`).FindAllStringSubmatch(out, -1) {
		if m[2] != "0" {
			t.Errorf("git step %s failed (rc %s)", m[1], m[2])
		}
	}
	if n := strings.Count(out, "STEP "); n != 17 {
		t.Errorf("%d steps reported, want 17", n)
	}
	for _, want := range []string{
		"AUTHOR " + identity + "|inside the sandbox " + tag + "\n",
		"COMMITTER " + identity + "|inside the sandbox " + tag + "\n",
		"ALIAS-LAST inside the sandbox " + tag + "\n",
		"STASHED stash@{0}: On main: wip " + tag + "\n",
		"LOG 3\n",
		"WORKTREE feature " + tag + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output has no line %q", strings.TrimSpace(want))
		}
	}
	if t.Failed() {
		t.Fatalf("git through safe_bash:\n%s", r)
	}

	// Outside: the commits are there, with the user's identity.
	log := devBare(t, dir, nil, "git log --all --format='%an <%ae>|%s' && git stash list && git status --porcelain")
	mustCode(t, log, 0)
	for _, want := range []string{identity + "|inside the sandbox " + tag, identity + "|feature " + tag} {
		mustContain(t, "git log outside", log.stdout, want)
	}
	if strings.Contains(log.stdout, "wip "+tag) {
		t.Errorf("the stash popped inside is still listed outside:\n%s", log.stdout)
	}
}

// snapEntry is what a cache snapshot records of one path.
type snapEntry struct {
	Mode   fs.FileMode
	Size   int64
	Mtime  int64 // ns
	Ctime  int64 // ns: any write, chmod, chown or touch changes it
	SHA256 string
	Link   string
}

// snapshot records every path below root, as root sees it from outside.
func snapshot(t *testing.T, root string) map[string]snapEntry {
	t.Helper()
	out := map[string]snapEntry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		e := snapEntry{Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime().UnixNano(), Ctime: st.Ctim.Nano()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Link, _ = os.Readlink(p)
		case fi.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
			e.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		out[p] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", root, err)
	}
	return out
}

// snapDiff lists what differs between two snapshots, one line a path.
func snapDiff(before, after map[string]snapEntry) []string {
	var out []string
	for p, a := range after {
		b, ok := before[p]
		switch {
		case !ok:
			out = append(out, "new: "+p)
		case a != b:
			var what []string
			if a.Mode != b.Mode {
				what = append(what, fmt.Sprintf("mode %v -> %v", b.Mode, a.Mode))
			}
			if a.Size != b.Size {
				what = append(what, fmt.Sprintf("size %d -> %d", b.Size, a.Size))
			}
			if a.SHA256 != b.SHA256 {
				what = append(what, "content")
			}
			if a.Link != b.Link {
				what = append(what, "link target")
			}
			if a.Mtime != b.Mtime {
				what = append(what, "mtime")
			}
			if a.Ctime != b.Ctime {
				what = append(what, "ctime")
			}
			out = append(out, "changed ("+strings.Join(what, ", ")+"): "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, "removed: "+p)
		}
	}
	sort.Strings(out)
	return out
}

// The user's own caches are read, never written: after sandboxed work that
// writes to them as a build does (new code built, vetted and tested, which
// adds build cache entries; a package installed from the npm cache) and
// after deliberate attempts to change them, no file or directory of the Go
// build cache, the module cache or the npm cache is new, changed or gone,
// checked from outside. The sandboxed work itself succeeds.
func TestDevCachesUntouched(t *testing.T) {
	s := devSetup(t)
	tag := devTag(6)
	paths := devBare(t, s.root, nil, "go env GOCACHE GOMODCACHE && npm config get cache")
	mustCode(t, paths, 0)
	caches := strings.Fields(paths.stdout)
	if len(caches) != 3 {
		t.Fatalf("the caches' paths: %q", paths.stdout)
	}
	before := map[string]map[string]snapEntry{}
	for _, c := range caches {
		before[c] = snapshot(t, c)
		if len(before[c]) < 10 {
			t.Fatalf("the cache %s holds %d paths: the setup should have filled it", c, len(before[c]))
		}
	}

	// A copy of the Go module, changed inside: new code, new cache entries.
	goDir := filepath.Join(s.root, "go-change-"+tag)
	mustCode(t, devBare(t, s.root, nil, "cp -r "+shq(s.goDir)+" "+shq(goDir)), 0)
	build := devBox(t, goDir, nil, `set -e
cat > ctxd_change.go <<'EOF'
package cobra

// ctxdChanged is code added inside the sandbox: building it writes new entries
// to the build cache.
func ctxdChanged() string { return "changed-`+tag+`" }
EOF
cat > ctxd_change_test.go <<'EOF'
package cobra

import "testing"

func TestCtxdChanged(t *testing.T) {
	if got := ctxdChanged(); got != "changed-`+tag+`" {
		t.Fatalf("ctxdChanged() = %q", got)
	}
	t.Log("ran the changed code")
}
EOF
go build ./...
go vet ./...
go test ./...
go test -count=1 -v -run TestCtxdChanged .
`)
	if build.code != 0 || !strings.Contains(build.stdout, "ran the changed code") || !strings.Contains(build.stdout, "--- PASS: TestCtxdChanged") {
		t.Fatalf("building and testing changed code through safe_bash: %s", build)
	}

	// A copy of the Node package installed from the npm cache inside.
	nodeDir := filepath.Join(s.root, "node-change-"+tag)
	if err := devCopyFixture("node", nodeDir); err != nil {
		t.Fatal(err)
	}
	if ci := devBox(t, nodeDir, nil, "npm ci --offline --no-audit --no-fund && npm test"); ci.code != 0 {
		t.Fatalf("npm ci --offline through safe_bash: %s", ci)
	}

	// And what a hostile command would try: append to an entry, make a new
	// one, touch, remove, in each cache, at the user's paths and where the
	// toolchains inside are pointed. Whether each fails or lands in a private
	// layer, none may reach the user's cache.
	var hostPaths strings.Builder
	for _, c := range caches {
		hostPaths.WriteString(shq(c) + " ")
	}
	attack := `for d in ` + hostPaths.String() + `"$(go env GOCACHE)" "$(go env GOMODCACHE)" "$(npm config get cache)"; do
  f=$(find "$d" -type f -size +0 | sort | head -1)
  g=$(find "$d" -type f -size +0 | sort | tail -1)
  echo "target $f $g"
  echo poisoned-` + tag + ` >> "$f"
  touch -d 2001-01-01 "$g"
  chmod u+w "$(dirname "$g")" "$g" 2>/dev/null; rm -f "$g"
  echo poisoned-` + tag + ` > "$d/ctxd-poison-` + tag + `"
  mkdir -p "$d/ctxd-poison-dir-` + tag + `"
done; true`
	mustCode(t, devBox(t, s.root, nil, attack), 0)

	for _, c := range caches {
		if diff := snapDiff(before[c], snapshot(t, c)); len(diff) > 0 {
			if len(diff) > 30 {
				diff = append(diff[:30], fmt.Sprintf("... and %d more", len(diff)-30))
			}
			t.Errorf("the user's cache %s was written by sandboxed work (%d paths before):\n  %s", c, len(before[c]), strings.Join(diff, "\n  "))
		}
	}
}
