package mcpwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/runner"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/transport"
	"github.com/contextd/contextd/ns"
)

// A wrapped server that cannot start, or exits while its client still talks
// to it, must not leave the client with a closed connection and nothing
// else: the client's requests get a JSON-RPC error saying what happened and
// what to do, the session record keeps the same, and the wrap prints it.

// How a failed server's stand-in behaves.
const (
	// exitWait bounds the wait for the server's exit status once its
	// output ended: a server that closes its stdout and goes on running is
	// ended like one that exited cleanly, without a diagnosis.
	exitWait = 5 * time.Second
	// failLinger is how long the stand-in of a failed server waits for the
	// client's next request (or its end) before it ends the session.
	failLinger = 30 * time.Second
	// maxStandInQueue bounds the answers a stand-in holds for a client that does
	// not read them: past it, the client is disconnected.
	maxStandInQueue = 1024
	// stderrLines and stderrLineMax bound the server's stderr quoted in the
	// message of an early exit.
	stderrLines   = 5
	stderrLineMax = 200
)

// serverConn is the relay's connection to a stdio server. While the server
// runs it is the server's stdio, and adds nothing. When the server's output
// ends and the server turns out to have ended early (it could not be
// started, or exited while requests of the client were waiting), it stands
// in for the server: every request the client is still waiting for, and
// every request it sends after, is answered with a JSON-RPC error saying
// what happened and what to do, until the client closes its end or
// failLinger passes without a request. A server that exited cleanly with
// nothing left unanswered ends the session at once, with no stand-in.
type serverConn struct {
	transport.Conn // the server's stdio

	proc *process
	// pending lists the client's requests still unanswered (the relay's
	// correlator).
	pending func() []json.RawMessage
	// explain says why the server ended, once it has: nil for a clean end.
	// unanswered tells whether requests of the client were left waiting.
	explain func(unanswered bool) error
	// onFail learns the failure, before any answer carrying it goes out.
	// It must not call back into the conn.
	onFail func(error)

	closeOnce sync.Once
	closed    chan struct{}

	mu     sync.Mutex
	failed error
	queue  [][]byte // answers not yet read by the relay
	// early holds the requests answered as left waiting (by jsonrpc.Key),
	// until their own Write, which may come after, is skipped.
	early map[string]bool
	last  time.Time     // when the stand-in last had something to do
	wake  chan struct{} // has a value when queue grew
}

func newServerConn(c transport.Conn, p *process, pending func() []json.RawMessage,
	explain func(bool) error, onFail func(error)) *serverConn {
	return &serverConn{Conn: c, proc: p, pending: pending, explain: explain, onFail: onFail,
		closed: make(chan struct{}), early: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// Read implements transport.Conn.
func (c *serverConn) Read(ctx context.Context) ([]byte, error) {
	if c.failure() == nil {
		msg, err := c.Conn.Read(ctx)
		if !errors.Is(err, io.EOF) {
			return msg, err
		}
		// The server's output ended: find out why.
		if !c.ended(ctx) {
			return nil, err
		}
	}
	return c.next(ctx)
}

// Write implements transport.Conn. A message for a server that has failed
// is answered here; one that finds the server's stdin closed (the server
// ended, or never started) is left to Read, which answers it once it knows
// why: the relay must not end on it, the client is owed an answer.
func (c *serverConn) Write(ctx context.Context, msg []byte) error {
	return c.WriteClassified(ctx, msg, nil)
}

var _ transport.ClassifiedWriter = (*serverConn)(nil)

// WriteClassified implements transport.ClassifiedWriter: Write, with the
// relay's classification of msg, which the stand-in needs to know which
// requests msg carries. Only a message the relay did not classify (one it
// or the wrap built itself) is classified here.
func (c *serverConn) WriteClassified(ctx context.Context, msg []byte, info *jsonrpc.Info) error {
	if c.failure() == nil {
		err := transport.WriteClassified(ctx, c.Conn, msg, info)
		if err == nil || !transport.IsClosed(err) || c.isClosed() {
			return err
		}
		if c.failure() == nil {
			// Not known yet why: ended will answer the request, which the
			// relay registered as waiting before it wrote it.
			return nil
		}
	}
	if info == nil {
		in, err := jsonrpc.Classify(msg)
		if err != nil {
			return nil // nothing in it to answer
		}
		info = &in
	}
	var ids []json.RawMessage
	switch {
	case info.Kind == jsonrpc.KindRequest:
		ids = append(ids, info.ID)
	case info.Kind == jsonrpc.KindBatch:
		for _, el := range info.Batch {
			if el.Kind == jsonrpc.KindRequest {
				ids = append(ids, el.ID)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) >= maxStandInQueue {
		return fmt.Errorf("mcp wrap: the client does not read the answers of a failed server: %w", transport.ErrClosed)
	}
	c.last = time.Now()
	c.answerLocked(ids, info.Kind == jsonrpc.KindBatch)
	return nil
}

// Close implements transport.Conn.
func (c *serverConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

func (c *serverConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// failure is why the server ended early, or nil.
func (c *serverConn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// ended waits for the server's exit and decides: true when it ended early
// (the stand-in then answers), false for a clean end.
func (c *serverConn) ended(ctx context.Context) bool {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.proc.done:
	case <-t.C:
		return false
	case <-c.closed:
		return false
	case <-ctx.Done():
		return false
	}
	// The requests left waiting and the failure are taken together: a
	// Write that found the server gone either came before (its request is
	// among those waiting) or sees the failure and answers itself.
	c.mu.Lock()
	ids := c.pending()
	err := c.explain(len(ids) > 0)
	if err == nil {
		c.mu.Unlock()
		return false
	}
	c.failed = err
	c.last = time.Now()
	for _, id := range ids {
		c.answerLocked([]json.RawMessage{id}, false)
		c.early[jsonrpc.Key(jsonrpc.ClientToServer, id)] = true
	}
	c.mu.Unlock()
	c.onFail(err) // before the relay reads the first answer: it is this goroutine
	return true
}

// answerLocked queues the failure's answer to the requests ids (as one batch
// when batch is set), skipping those answered already as left waiting.
func (c *serverConn) answerLocked(ids []json.RawMessage, batch bool) {
	var out []json.RawMessage
	for _, id := range ids {
		k := jsonrpc.Key(jsonrpc.ClientToServer, id)
		if k == "" || c.early[k] {
			delete(c.early, k)
			continue
		}
		out = append(out, failureAnswer(id, c.failed))
	}
	switch {
	case len(out) == 0:
		return
	case batch:
		b, _ := json.Marshal(out)
		c.queue = append(c.queue, b)
	default:
		for _, m := range out {
			c.queue = append(c.queue, m)
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// next returns the next answer of the stand-in, or the end of the session
// once failLinger has passed with nothing to do.
func (c *serverConn) next(ctx context.Context) ([]byte, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return m, nil
		}
		idle := time.Until(c.last.Add(failLinger))
		c.mu.Unlock()
		if idle <= 0 {
			return nil, io.EOF
		}
		t := time.NewTimer(idle)
		select {
		case <-c.wake:
		case <-t.C:
		case <-c.closed:
			t.Stop()
			return nil, transport.ErrClosed
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// failureAnswer is the JSON-RPC error answering request id for a server
// that ended early: the error as contextd prints it (code, message, hint)
// and, as for the engine's refusals, its code in data.contextd.
func failureAnswer(id json.RawMessage, err error) []byte {
	type errorObject struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Contextd string `json:"contextd"`
		} `json:"data"`
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   errorObject     `json:"error"`
	}
	m.JSONRPC, m.ID = "2.0", id
	m.Error.Code, m.Error.Message = jsonrpc.CodeInternalError, catalog.Format(err)
	m.Error.Data.Contextd = catalog.ClassOf(err).Code
	b, mErr := json.Marshal(&m)
	if mErr != nil { // the id is the client's valid JSON; keep answering regardless
		return jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError, catalog.Format(err))
	}
	return b
}

// failureText is err as the session record keeps it: the first line of what
// contextd prints, code first.
func failureText(err error) string {
	line, _, _ := strings.Cut(catalog.Format(err), "\n")
	return line
}

// serverInfo is what explains a failed start: the command as the client
// gave it, and what the sandbox shows.
type serverInfo struct {
	name      string
	command   []string
	cwd       string
	path      string // the caller's PATH
	workspace string
	home      string
	config    string   // the configuration file to edit
	readOnly  []string // the server's read_only paths
	readWrite []string // and its read_write ones
	// egress gives the egress proxy's refusals so far (nil: no proxy).
	egress func() []string
}

// explain says why the server ended: nil for a clean end, that is an exit
// with status 0 (or one contextd caused) that left nothing unanswered.
func (in *serverInfo) explain(p *process, unanswered bool) error {
	if p.err != nil {
		var se *runner.StartError
		if errors.As(p.err, &se) {
			return in.startFailure(se)
		}
		return fmt.Errorf("mcp wrap: the wrapped server could not be started: %w", p.err)
	}
	if p.exit.Canceled || p.exit.Code == 0 && !unanswered {
		return nil
	}
	err := exitFailure(p.exit, p.stderr.lastLines(stderrLines, stderrLineMax))
	if in.egress != nil {
		// A server that could not fetch what it needs says so in its own
		// words; the refusal says what to change.
		if lines := in.egress(); len(lines) > 0 {
			c := err.(*classed)
			c.msg += "; " + strings.Join(lines, "; ")
		}
	}
	return err
}

// exitFailure is the error of a server that exited early, with the last
// lines it wrote to stderr (scrubbed).
func exitFailure(ex runner.Exit, tail []string) error {
	var b strings.Builder
	b.WriteString("mcp wrap: the wrapped server exited")
	switch sig := ex.Code - 128; {
	case ex.TimedOut:
		b.WriteString(": its time limit ran out")
	case sig > 0 && sig < 65:
		fmt.Fprintf(&b, ": killed by signal %d (%s)", sig, unix.SignalName(syscall.Signal(sig)))
		if syscall.Signal(sig) == syscall.SIGKILL {
			b.WriteString(", maybe for its memory limit (memory_max under [mcp.servers.NAME])")
		}
	case ex.Code == 0:
		b.WriteString(" (status 0) without answering")
	default:
		fmt.Fprintf(&b, " with status %d", ex.Code)
	}
	if len(tail) == 0 {
		b.WriteString("; it wrote nothing to stderr")
	} else {
		b.WriteString("; the last lines it wrote to stderr: ")
		b.WriteString(strings.Join(tail, " | "))
	}
	return &classed{msg: b.String(), class: catalog.ErrServerExited}
}

// startFailure says why the server's program could not be started in the
// sandbox, and what would let it start.
func (in *serverInfo) startFailure(se *runner.StartError) error {
	prog := se.Path
	if len(in.command) > 0 {
		prog = in.command[0]
	}
	host := in.onHost(prog)
	var why string
	switch {
	case se.Exec && se.Errno == syscall.ENOENT:
		interp := interpreter(host)
		if interp == "" {
			interp = "its interpreter (the #! line)"
		}
		why = fmt.Sprintf("%s runs with %s, which is not visible in the sandbox%s", prog, interp, in.toShow(interp))
	case se.Errno == syscall.ENOENT || se.Errno == syscall.ENOTDIR || se.Errno == syscall.ELOOP:
		switch {
		case host != "" && host != prog:
			why = fmt.Sprintf("%s (%s on this machine) is not visible in the sandbox%s", prog, host, in.toShow(host))
		case host != "":
			why = fmt.Sprintf("%s is not visible in the sandbox%s", prog, in.toShow(host))
		case strings.Contains(prog, "/"):
			why = fmt.Sprintf("%s does not exist; check the command", prog)
		default:
			why = fmt.Sprintf("%s: command not found in PATH, the sandbox's nor yours; install it, or give its full path", prog)
		}
	case se.Errno == syscall.EACCES:
		if st, err := os.Stat(host); err == nil && st.IsDir() {
			why = fmt.Sprintf("%s is a directory; give the server's program", prog)
		} else {
			why = fmt.Sprintf("%s is not executable: make it executable (chmod +x %s), or put its interpreter first (node %s, python3 %s)", prog, prog, prog, prog)
		}
	case se.Errno == syscall.ENOEXEC:
		why = fmt.Sprintf("%s is not a program the system can run (a script needs a #! line): put its interpreter first (node %s, python3 %s)", prog, prog, prog)
	default:
		why = fmt.Sprintf("%s: %v", prog, se.Errno)
	}
	return &classed{msg: "mcp wrap: the wrapped server could not be started: " + why, class: catalog.ErrServerStart}
}

// redacted is err, of the same class, with what looks like a secret in its
// message replaced (a path can hold one; the stderr lines are scrubbed
// already): it goes to the record and to the wrap's stderr as it is.
func redacted(err error, redact func([]byte) []byte) error {
	if err == nil {
		return nil
	}
	return &classed{msg: string(redact([]byte(err.Error()))), class: catalog.ClassOf(err)}
}

// classed is an error whose message says what its class is already, in its
// own words, so the class's name is not appended to it (as %w would).
type classed struct {
	msg   string
	class *catalog.Class
}

func (e *classed) Error() string { return e.msg }
func (e *classed) Unwrap() error { return e.class }

// onHost is where prog is on this machine, as the caller would run it: the
// path itself (relative to the working directory), or the first match in
// the caller's PATH; "" when there is none.
func (in *serverInfo) onHost(prog string) string {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(in.cwd, p)
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	path := in.path
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// interpreter is the program a script's #! line names, or "".
func interpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if f := strings.Fields(rest); ok && len(f) > 0 {
		return f[0]
	}
	return ""
}

// toShow says how to show host (a program on this machine) to the sandbox:
// the directories to list under read_only, in the configuration, or, when
// no directory can be shown without showing the home directory, to install
// the server elsewhere.
func (in *serverInfo) toShow(host string) string {
	var dirs []string
	if host != "" && filepath.IsAbs(host) {
		cands := []string{in.installRoot(host)}
		if real, err := filepath.EvalSymlinks(host); err == nil && real != host {
			cands = append(cands, in.installRoot(real))
		}
		for _, d := range cands {
			if d != "" && !in.visible(d) && !containsAny(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	table := "[mcp.servers." + tomlKey(in.name) + "]"
	where := fmt.Sprintf(" (it sees the project, the system directories and the paths %s read_only and read_write list)", table)
	if len(dirs) == 0 {
		return where + "; install the server inside the project, or in a directory of its own that you show with read_only under " + table
	}
	quoted := make([]string, len(dirs))
	for i, d := range dirs {
		quoted[i] = strconv.Quote(d)
	}
	set := "put read_only = [" + strings.Join(quoted, ", ") + "]"
	if len(in.readOnly) > 0 {
		set = "add " + strings.Join(quoted, ", ") + " to read_only"
	}
	return fmt.Sprintf("%s; to show it, %s under %s in %s and restart contextd (systemctl --user restart contextd.service), or install the server inside the project",
		where, set, table, in.config)
}

// installRoot is the directory to show for the program at p: the top of the
// node_modules tree it is in, the prefix of a bin directory, or its own
// directory; never the home directory or one above it, which would show
// everything contextd hides.
func (in *serverInfo) installRoot(p string) string {
	if i := strings.Index(p, "/node_modules/"); i > 0 {
		if root := p[:i]; !in.tooWide(root) {
			return root
		}
		if root := p[:i] + "/node_modules"; !in.tooWide(root) {
			return root
		}
	}
	dir := filepath.Dir(p)
	if filepath.Base(dir) == "bin" && !within(dir, in.home) {
		if parent := filepath.Dir(dir); !in.tooWide(parent) {
			return parent
		}
	}
	if in.tooWide(dir) {
		return ""
	}
	return dir
}

// tooWide reports whether showing dir would show the root, the home
// directory, or a directory that holds it.
func (in *serverInfo) tooWide(dir string) bool {
	return dir == "/" || dir == "." || in.home != "" && within(in.home, dir)
}

// visible reports whether the sandbox shows dir already: the workspace, the
// system directories and the server's own paths; not the rest of the home.
func (in *serverInfo) visible(dir string) bool {
	if within(dir, in.workspace) {
		return true
	}
	for _, d := range append(in.readOnly[:len(in.readOnly):len(in.readOnly)], in.readWrite...) {
		if within(dir, d) {
			return true
		}
	}
	if in.home != "" && within(dir, in.home) {
		return false
	}
	for _, d := range ns.DefaultReadOnly {
		if within(dir, d) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or under it.
func within(p, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func containsAny(dirs []string, d string) bool {
	for _, x := range dirs {
		if within(d, x) {
			return true
		}
	}
	return false
}

// tomlKey is name as a TOML key: bare when it can be, else quoted (a '.'
// would split it).
func tomlKey(name string) string {
	if strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" && name != "" {
		return name
	}
	return strconv.Quote(name)
}
