//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/syncbuf"
)

// The MCP face is driven by the official TypeScript SDK client (e2e/mcpjs,
// npm package @modelcontextprotocol/sdk at the version package-lock.json pins)
// under Node, as the test user, with the daemon socket-activated as usual.

var mcpjs struct {
	once sync.Once
	dir  string // holds client.mjs and its node_modules, readable by the test user
	err  error
}

// mcpJSDir installs e2e/mcpjs's packages with `npm ci` when its lock file
// changed since the last install (a stamp in node_modules records the lock's
// hash, so repeated runs do not reinstall), and returns a directory with
// client.mjs the test user can run.
func mcpJSDir(t *testing.T) string {
	t.Helper()
	mcpjs.once.Do(func() { mcpjs.dir, mcpjs.err = installMCPJS() })
	if mcpjs.err != nil {
		t.Fatal(mcpjs.err)
	}
	return mcpjs.dir
}

func installMCPJS() (string, error) {
	return installJS("mcpjs", filepath.Join("node_modules", "@modelcontextprotocol", "sdk", "package.json"), "client.mjs")
}

// installJS installs the e2e suite's JS client e2e/NAME from its lock, and
// returns a directory of it the test user can read: the checkout's, or a
// copy in the run's directory of binaries when the test user cannot reach
// the checkout (under /root, say). probes are files the user must read.
func installJS(name string, probes ...string) (string, error) {
	src := filepath.Join(env.repo, "e2e", name)
	if err := npmCI(src); err != nil {
		return "", err
	}
	readable := "true"
	for _, p := range probes {
		readable += " && test -r " + shq(filepath.Join(src, p))
	}
	if r := userSh(nil, readable); r.code == 0 {
		return src, nil
	}
	dst := filepath.Join(filepath.Dir(env.bin), name)
	if out, err := exec.Command("sh", "-c", "rm -rf "+shq(dst)+" && cp -r "+shq(src)+" "+shq(dst)+" && chmod -R a+rX "+shq(dst)).CombinedOutput(); err != nil {
		return "", fmt.Errorf("copy %s for the test user: %v\n%s", src, err, out)
	}
	return dst, nil
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// mcpClient is client.mjs running as the test user with `contextd-proxy mcp`
// as its server; requests go one JSON line at a time.
type mcpClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncbuf.Buffer
	hello  mcpAnswer // the first line: server info after initialize
}

// mcpAnswer is one line of client.mjs.
type mcpAnswer struct {
	Server *struct {
		Name, Version string
	} `json:"server"`
	Capabilities map[string]json.RawMessage `json:"capabilities"`
	Tools        []struct {
		Name        string                     `json:"name"`
		Description string                     `json:"description"`
		InputSchema map[string]json.RawMessage `json:"inputSchema"`
	} `json:"tools"`
	Result *struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startMCP starts client.mjs in the project with extra environment words.
func startMCP(t *testing.T, vars ...string) *mcpClient {
	t.Helper()
	js := mcpJSDir(t)
	args := []string{env.usermgr, "run", testUser, "-C", env.project}
	args = append(args, vars...)
	args = append(args, "--", "node", filepath.Join(js, "client.mjs"), "--", filepath.Join(env.bin, "contextd-proxy"), "mcp")
	c := &mcpClient{t: t, cmd: exec.Command("bash", args...), lines: make(chan []byte, 16), stderr: &syncbuf.Buffer{}}
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- slices.Clone(sc.Bytes())
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		done := make(chan struct{})
		go func() { c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			<-done
		}
	})
	c.hello = c.next("initialize")
	return c
}

// next reads the client's next answer.
func (c *mcpClient) next(what string) mcpAnswer {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("%s: client.mjs ended; stderr:\n%s", what, c.stderr.String())
		}
		var a mcpAnswer
		if err := json.Unmarshal(l, &a); err != nil {
			c.t.Fatalf("%s: client.mjs printed %q: %v", what, l, err)
		}
		return a
	case <-time.After(90 * time.Second):
		c.t.Fatalf("%s: no answer in 90 s; stderr:\n%s", what, c.stderr.String())
	}
	panic("unreachable")
}

func (c *mcpClient) do(req map[string]any) mcpAnswer {
	c.t.Helper()
	b, _ := json.Marshal(req)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to client.mjs: %v; stderr:\n%s", err, c.stderr.String())
	}
	return c.next(string(b))
}

// call calls a tool and returns its text and isError; a JSON-RPC error fails.
func (c *mcpClient) call(name string, args any) (string, bool) {
	c.t.Helper()
	a := c.do(map[string]any{"op": "call", "name": name, "arguments": args})
	if a.Error != nil || a.Result == nil {
		c.t.Fatalf("%s: protocol error %+v", name, a.Error)
	}
	var text strings.Builder
	for _, ct := range a.Result.Content {
		if ct.Type != "text" {
			c.t.Fatalf("%s: content of type %q", name, ct.Type)
		}
		text.WriteString(ct.Text)
	}
	return text.String(), a.Result.IsError
}

// mustOK calls a tool that must succeed and returns its text.
func (c *mcpClient) mustOK(name string, args any, holds ...string) string {
	c.t.Helper()
	text, isErr := c.call(name, args)
	if isErr {
		c.t.Fatalf("%s %v: isError:\n%s", name, args, text)
	}
	mustContain(c.t, name+" over MCP", text, holds...)
	return text
}

// contextd-proxy mcp, driven by the official TypeScript SDK client: the
// handshake, the tool list, one real call of every tool, the failures, the
// sessions, paging through a cut result, redaction of a planted secret, and
// the audit records of it all.
func TestMCPServe(t *testing.T) {
	c := startMCP(t)
	if c.hello.Server == nil || c.hello.Server.Name != "contextd" || c.hello.Capabilities["tools"] == nil {
		t.Fatalf("initialize: %+v", c.hello)
	}

	list := c.do(map[string]any{"op": "list"})
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Description == "" || string(tl.InputSchema["type"]) != `"object"` {
			t.Errorf("tool %s: description %q, schema %v", tl.Name, tl.Description, tl.InputSchema)
		}
	}
	slices.Sort(names)
	want := []string{"branch", "checkpoint_list", "checkpoint_restore", "checkpoint_save", "continue",
		"memory_feedback", "memory_get", "memory_search", "memory_store", "return", "safe_bash", "safe_read", "safe_write"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v, want %v", names, want)
	}

	dir := "mcp-e2e-" + randomFrom(t, "abcdefghij", 6)
	t.Cleanup(func() { userSh(t, "rm -rf "+shq(filepath.Join(env.project, dir))) })

	// The file tools and the shell, one after the other, in one session.
	c.mustOK("safe_write", map[string]any{"path": dir + "/notes.txt", "content": "alpha\nbeta\n"}, "created "+dir+"/notes.txt")
	if b, err := os.ReadFile(filepath.Join(env.project, dir, "notes.txt")); err != nil || string(b) != "alpha\nbeta\n" {
		t.Fatalf("safe_write over MCP wrote %q, %v", b, err)
	}
	if text := c.mustOK("safe_read", map[string]any{"path": dir + "/notes.txt", "offset": 2}); text != "     2\tbeta\n" {
		t.Errorf("safe_read over MCP: %q", text)
	}
	text := c.mustOK("safe_bash", map[string]any{"command": "cat " + dir + "/notes.txt; echo \"session=$CONTEXTD_SESSION\"; exit 3"},
		"alpha\nbeta\n", "[exit status 3]")
	session := regexp.MustCompile(`session=(\S+)`).FindStringSubmatch(text)
	if session == nil || !strings.HasPrefix(session[1], "mcp-") || uuidRe.FindString(session[1]) == "" {
		t.Fatalf("the session of an MCP connection is not mcp-<uuid>:\n%s", text)
	}
	again := c.mustOK("safe_bash", map[string]any{"command": "echo \"session=$CONTEXTD_SESSION\""}, "[exit status 0]")
	if !strings.Contains(again, "session="+session[1]+"\n") {
		t.Errorf("two calls of one connection are in different sessions: %s, then:\n%s", session[1], again)
	}

	// A secret planted in a file comes back redacted, and a write of what was
	// read puts it back on disk: the placeholders belong to this session.
	file, secrets := plantedSecrets(t)
	writeProjectFile(t, dir+"/app.env", file)
	read := c.mustOK("safe_read", map[string]any{"path": dir + "/app.env"})
	noSecrets(t, "safe_read over MCP", read, secrets)
	var plain strings.Builder
	for _, line := range strings.SplitAfter(read, "\n") {
		if _, rest, ok := strings.Cut(line, "\t"); ok {
			plain.WriteString(rest)
		}
	}
	c.mustOK("safe_write", map[string]any{"path": dir + "/app.env", "content": strings.Replace(plain.String(), "LOG_LEVEL=info", "LOG_LEVEL=debug", 1)})
	if got, _ := os.ReadFile(filepath.Join(env.project, dir, "app.env")); string(got) != strings.Replace(file, "LOG_LEVEL=info", "LOG_LEVEL=debug", 1) {
		t.Errorf("the edited file lost its secrets:\n%s", got)
	}
	bash := c.mustOK("safe_bash", map[string]any{"command": "grep TOKEN " + dir + "/app.env"})
	noSecrets(t, "safe_bash over MCP", bash, secrets)

	// A result cut to its budget ends with the reference, and continue pages
	// through the whole output.
	mustCode(t, userSh(t, "seq 1 6000 > "+shq(filepath.Join(env.project, dir, "big.txt"))), 0)
	first := c.mustOK("safe_read", map[string]any{"path": dir + "/big.txt"})
	refRe := regexp.MustCompile(`\[truncated: call continue with \{"ref":"(safe_read:[^"]+)"\} for the next part\]\n$`)
	m := refRe.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("safe_read of 6000 lines was not cut with a continue line:\n...%s", first[max(0, len(first)-300):])
	}
	var pages strings.Builder
	n := 0
	for ref := m[1]; ref != ""; n++ {
		if n > 100 {
			t.Fatal("more than 100 pages")
		}
		page := c.mustOK("continue", map[string]any{"ref": ref})
		ref = ""
		if m := refRe.FindStringSubmatch(page); m != nil {
			ref, page = m[1], strings.TrimSuffix(page, m[0])
		}
		pages.WriteString(page)
	}
	var whole strings.Builder
	for i := 1; i <= 6000; i++ {
		fmt.Fprintf(&whole, "%6d\t%d\n", i, i)
	}
	if pages.String() != whole.String() {
		t.Errorf("%d pages through continue (%d bytes) are not the numbered file (%d bytes)", n, pages.Len(), whole.Len())
	}

	// The state tools.
	tag := randomFrom(t, "abcdefghijklmnopqrstuvwxyz", 10)
	stored := c.mustOK("memory_store", map[string]any{
		"title":       "MCP clients pass the whole environment " + tag,
		"description": "Use when a stdio MCP server misses a variable; not for HTTP servers.",
		"content":     "Give StdioClientTransport an env, or it passes only HOME, PATH and a few more (" + tag + ").",
		"outcome":     "success", "tags": []string{"mcp", tag},
	})
	mem := uuidRe.FindString(stored)
	if mem == "" {
		t.Fatalf("memory_store printed no id: %s", stored)
	}
	c.mustOK("memory_search", map[string]any{"query": "stdio MCP server misses an environment variable " + tag}, mem)
	c.mustOK("memory_get", map[string]any{"id": mem}, "StdioClientTransport", tag)
	c.mustOK("memory_feedback", map[string]any{"id": mem, "helpful": true}, "confidence")

	saved := c.mustOK("checkpoint_save", map[string]any{"summary": "MCP face under test " + tag, "name": "mcp-e2e", "context": "client.mjs drives it"})
	ck := uuidRe.FindString(saved)
	if ck == "" {
		t.Fatalf("checkpoint_save printed no id: %s", saved)
	}
	c.mustOK("checkpoint_list", map[string]any{"limit": 50}, ck)
	restored := c.mustOK("checkpoint_restore", map[string]any{"id": ck, "level": "summary"}, "MCP face under test "+tag)
	if strings.Contains(restored, "client.mjs drives it") {
		t.Errorf("checkpoint_restore at level summary printed the context:\n%s", restored)
	}

	br := c.mustOK("branch", map[string]any{"description": "look around the MCP face", "budget": 2000})
	if uuidRe.FindString(br) == "" {
		t.Fatalf("branch printed no id: %s", br)
	}
	c.mustOK("safe_bash", map[string]any{"command": "echo inside the branch"}, "inside the branch")
	c.mustOK("return", map[string]any{"summary": "the MCP face works " + tag}, "the MCP face works "+tag)

	// Failures are isError results that start with their catalog code.
	for _, f := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"safe_read", map[string]any{"path": "../../etc/passwd"}, "CTXD-E020"},
		{"safe_read", map[string]any{"path": dir + "/missing.txt"}, "CTXD-E021"},
		{"safe_bash", map[string]any{"command": "true", "shell": "zsh"}, "CTXD-E002"},
		{"safe_bash", map[string]any{"command": "sleep 60", "timeout": 1}, "CTXD-E030"},
		{"memory_get", map[string]any{"id": "00000000-0000-4000-8000-000000000000"}, "CTXD-E070"},
		{"return", map[string]any{"summary": "no branch is open"}, "CTXD-E072"},
		{"continue", map[string]any{"ref": "safe_read:c0123456789abcdef0123456789abcdef"}, "CTXD-E040"},
	} {
		text, isErr := c.call(f.tool, f.args)
		if !isErr || !strings.HasPrefix(text, f.code+": ") || !strings.Contains(text, "\nhint: ") {
			t.Errorf("%s %v: isError %v, want %s first:\n%s", f.tool, f.args, isErr, f.code, text)
		}
	}
	// Protocol errors stay JSON-RPC errors.
	if a := c.do(map[string]any{"op": "call", "name": "safe_rm", "arguments": map[string]any{}}); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("unknown tool: %+v", a)
	}
	if a := c.do(map[string]any{"op": "raw", "method": "tools/call", "params": map[string]any{"name": "safe_read", "arguments": []string{"x"}}}); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("arguments that are not an object: %+v", a)
	}

	// Another connection is another session: it cannot page this one's output
	// nor return from its branches. CONTEXTD_SESSION names the session instead.
	other := startMCP(t)
	if text, isErr := other.call("continue", map[string]any{"ref": m[1]}); !isErr || !strings.HasPrefix(text, "CTXD-E040: ") {
		t.Errorf("another connection paged this one's output: %v\n%s", isErr, text)
	}
	if s := other.mustOK("safe_bash", map[string]any{"command": "echo \"session=$CONTEXTD_SESSION\""}); strings.Contains(s, session[1]) {
		t.Errorf("two connections share the session %s", session[1])
	}
	fixed := startMCP(t, "CONTEXTD_SESSION=e2e-mcp-fixed")
	fixed.mustOK("safe_bash", map[string]any{"command": "echo \"session=$CONTEXTD_SESSION\""}, "session=e2e-mcp-fixed\n")

	// Every call above left an audit record in the connection's session, made
	// by the MCP binary.
	r := userSh(t, "cat ~/.local/state/contextd/audit/*.jsonl")
	mustCode(t, r, 0)
	seen := map[string]bool{}
	for _, line := range strings.Split(r.stdout, "\n") {
		var rec struct {
			Session string `json:"session"`
			Tool    string `json:"tool"`
			PeerExe string `json:"peer_exe"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Session != session[1] {
			continue
		}
		if filepath.Base(rec.PeerExe) != "contextd-proxy-mcp" {
			t.Errorf("audit record of %s made by %q", rec.Tool, rec.PeerExe)
		}
		seen[rec.Tool] = true
	}
	for _, tl := range want {
		if tl != "continue" && !seen[tl] {
			t.Errorf("no audit record of %s in session %s (seen %v)", tl, session[1], seen)
		}
	}
	if t.Failed() {
		t.Logf("client.mjs stderr:\n%s", c.stderr.String())
	}
}
