// Package inspect is the terminal UI of `contextd inspect`: a bubbletea model
// that lists the messages of a live `mcp wrap` session, pairs requests with
// their responses, filters them, and holds, edits, forwards or drops messages
// while interception is on.
package inspect

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

// Options configure a Model; every zero field means the default it documents.
type Options struct {
	// Send hands a command to the daemon. It is called from Update, so it must
	// not block: the caller queues the command and writes it elsewhere. An
	// error is shown in the status line and the command counts as not sent.
	// nil: every command fails with "not connected".
	Send func(lite.InspectCommand) error
	// Dir is where `s` saves the session ("" means the working directory).
	Dir string
	// Editor is the command line `m` runs with the message file as its last
	// argument, through sh ("" means $EDITOR, then vi).
	Editor string
	// Now stamps saved sessions (nil means time.Now).
	Now func() time.Time
}

// EventMsg carries one event from the daemon into the model.
type EventMsg struct{ Event lite.InspectEvent }

// ClosedMsg says the connection to the daemon ended; Err is nil when it was
// closed cleanly.
type ClosedMsg struct{ Err error }

// editedMsg reports the end of the editor run of `m`.
type editedMsg struct {
	seq  uint64
	path string
	err  error
}

// savedMsg reports the end of `s`.
type savedMsg struct {
	path string
	err  error
}

type pane uint8

const (
	listPane pane = iota
	detailPane
)

// The direction filter's states, in the order `>` cycles through them.
var dirFilters = []string{"", "client->server", "server->client"}

// The kind filter's states, in the order `t` cycles through them.
var kindFilters = []string{"", "request", "response", "notification", "error", "batch", "invalid"}

// entry is one message of the session and what the inspector knows about it.
type entry struct {
	m lite.InspectMessage
	// held: waiting for a decision (Action "held" and no Decided event yet).
	held bool
	// outcome is what became of a message that was held: "forward",
	// "modify", "drop" (this inspector's command) or "released" (decided
	// elsewhere, or by intercept going off).
	outcome string
	// asked is the command this inspector sent for a held message, until the
	// daemon confirms it with Decided.
	asked string
	// resp is, for a request, the Seq of the response that answers it.
	resp uint64
	// errCode is error.code of an error response, as text.
	errCode string
	// rev counts changes, so the detail pane knows when to redraw.
	rev int
}

// Model is the inspector's state. Use it through a pointer: Update mutates
// it and returns it.
type Model struct {
	opts Options

	hello     lite.InspectHello
	intercept bool
	ended     bool
	endNote   string

	entries []*entry
	bySeq   map[uint64]*entry
	// orphans holds responses that arrived before their request, by the
	// request's Seq, so that pairing does not depend on arrival order.
	orphans map[uint64]uint64

	width, height int

	sel    uint64 // Seq of the selected message (0: none)
	follow bool   // the selection tracks the newest visible message
	top    int    // index of the first listed row among the visible ones
	focus  pane

	detail    viewport.Model
	detailKey string

	dirFilter  int
	kindFilter int
	text       string

	prompting bool
	input     string
	before    string // the text filter when the prompt opened

	help        bool
	confirmQuit bool
	editing     uint64

	status    string
	statusErr bool
}

// New returns a model for the session hello describes.
func New(hello lite.InspectHello, opts Options) *Model {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Model{
		opts:      opts,
		hello:     hello,
		intercept: hello.Intercept,
		bySeq:     map[uint64]*entry{},
		orphans:   map[uint64]uint64{},
		width:     80,
		height:    24,
		follow:    true,
		detail:    viewport.New(80, 10),
	}
	m.sync()
	return m
}

// Init starts nothing: events arrive through Program.Send.
func (m *Model) Init() tea.Cmd { return nil }

// Update applies one message and returns the command to run next, if any.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case EventMsg:
		m.event(msg.Event)
	case ClosedMsg:
		if !m.ended {
			m.ended = true
			m.endNote = "connection closed"
			if msg.Err != nil {
				m.setErr(fmt.Sprintf("connection to the daemon lost: %v", msg.Err))
			}
		}
	case editedMsg:
		m.edited(msg)
	case savedMsg:
		if msg.err != nil {
			m.setErr(msg.err.Error())
		} else {
			m.setStatus("saved the session to " + msg.path)
		}
	case tea.KeyMsg:
		cmd = m.key(msg)
	}
	m.sync()
	return m, cmd
}

// event applies one event from the daemon.
func (m *Model) event(ev lite.InspectEvent) {
	switch {
	case ev.Hello != nil:
		m.hello = *ev.Hello
		m.intercept = ev.Hello.Intercept
	case ev.Message != nil:
		m.add(*ev.Message)
	case ev.Decided != 0:
		if e := m.bySeq[ev.Decided]; e != nil && (e.held || e.asked != "") {
			e.held = false
			e.outcome = e.asked
			if e.outcome == "" {
				e.outcome = "released"
			}
			e.asked = ""
			e.rev++
		}
	case ev.Intercept != nil:
		m.intercept = *ev.Intercept
		if m.intercept {
			m.setStatus("intercept is on: new messages are held until you decide")
		} else {
			m.setStatus("intercept is off: messages flow, held ones were released")
		}
	case ev.Ended:
		m.ended = true
		m.endNote = "session ended"
		m.setStatus("the wrap session has ended; s still saves what was received")
	case ev.Error != nil:
		// One line: the code and the message (the hint would not fit).
		err := catalog.FromDetail(ev.Error)
		m.setErr(catalog.ClassOf(err).Code + ": " + err.Error())
	}
}

// add records a message, or updates it when the daemon sends a Seq again
// (for instance with its final action after a decision).
func (m *Model) add(msg lite.InspectMessage) {
	e := m.bySeq[msg.Seq]
	if e == nil {
		e = &entry{}
		m.bySeq[msg.Seq] = e
		if n := len(m.entries); n == 0 || m.entries[n-1].m.Seq < msg.Seq {
			m.entries = append(m.entries, e)
		} else {
			m.insertOrdered(e, msg.Seq)
		}
	}
	// The daemon announces a held message before its verdict, with less of
	// its envelope; the final copy must not lose what the first one said.
	if msg.ID == "" {
		msg.ID = e.m.ID
	}
	if msg.Corr == 0 {
		msg.Corr = e.m.Corr
	}
	e.m = msg
	e.rev++
	e.held = msg.Action == "held"
	if !e.held && e.asked != "" {
		e.outcome, e.asked = e.asked, ""
	}
	if !e.held && e.outcome == "released" {
		// Decided elsewhere: the message's own action says how.
		e.outcome = ""
	}
	if msg.Kind == "error" {
		e.errCode = errorCode(msg.Raw)
	}
	switch msg.Kind {
	case "request":
		if r, ok := m.orphans[msg.Seq]; ok {
			delete(m.orphans, msg.Seq)
			e.resp = r
		}
	case "response", "error":
		if msg.Corr != 0 && msg.Corr != msg.Seq {
			if req := m.bySeq[msg.Corr]; req != nil {
				req.resp = msg.Seq
				req.rev++
			} else {
				m.orphans[msg.Corr] = msg.Seq
			}
		}
	}
}

func (m *Model) insertOrdered(e *entry, seq uint64) {
	i := len(m.entries)
	for i > 0 && m.entries[i-1].m.Seq > seq {
		i--
	}
	m.entries = append(m.entries, nil)
	copy(m.entries[i+1:], m.entries[i:])
	m.entries[i] = e
}

// visible returns the messages the filters let through, in order. Held
// messages are always listed: they block the agent until someone decides.
func (m *Model) visible() []*entry {
	if m.dirFilter == 0 && m.kindFilter == 0 && m.text == "" {
		return m.entries
	}
	out := make([]*entry, 0, len(m.entries))
	needle := strings.ToLower(m.text)
	for _, e := range m.entries {
		if e.held || m.passes(e, needle) {
			out = append(out, e)
		}
	}
	return out
}

func (m *Model) passes(e *entry, needle string) bool {
	if d := dirFilters[m.dirFilter]; d != "" && e.m.Dir != d {
		return false
	}
	if k := kindFilters[m.kindFilter]; k != "" && e.m.Kind != k {
		return false
	}
	if needle == "" {
		return true
	}
	method, tool := e.m.Method, e.m.Tool
	if req := m.request(e); req != nil {
		method, tool = req.m.Method, req.m.Tool
	}
	return strings.Contains(strings.ToLower(method), needle) || strings.Contains(strings.ToLower(tool), needle)
}

// request is the request a response or error answers, or nil.
func (m *Model) request(e *entry) *entry {
	if (e.m.Kind == "response" || e.m.Kind == "error") && e.m.Corr != 0 && e.m.Corr != e.m.Seq {
		return m.bySeq[e.m.Corr]
	}
	return nil
}

// partner is the other half of a request/response pair, or nil.
func (m *Model) partner(e *entry) *entry {
	if e == nil {
		return nil
	}
	if req := m.request(e); req != nil {
		return req
	}
	if e.resp != 0 {
		return m.bySeq[e.resp]
	}
	return nil
}

func (m *Model) selected() *entry { return m.bySeq[m.sel] }

// sync restores the invariants after any change: the selection is a listed
// message (or the newest one while following), the list scrolls to it, the
// detail pane shows it.
func (m *Model) sync() {
	vis := m.visible()
	idx := -1
	if len(vis) > 0 {
		// Following stops while the user reads the detail pane: the
		// message under their eyes must not change by itself.
		if (m.follow && m.focus == listPane) || m.sel == 0 {
			idx = len(vis) - 1
		} else {
			idx = indexOf(vis, m.sel)
			if idx < 0 {
				// The selection was filtered out: keep the place in the
				// stream, on the nearest listed message before it.
				idx = 0
				for i, e := range vis {
					if e.m.Seq <= m.sel {
						idx = i
					}
				}
			}
		}
		m.sel = vis[idx].m.Seq
	} else {
		m.sel = 0
	}
	rows := m.layout().listRows
	if idx >= 0 {
		if idx < m.top {
			m.top = idx
		}
		if idx >= m.top+rows {
			m.top = idx - rows + 1
		}
	}
	if m.top > len(vis)-rows {
		m.top = len(vis) - rows
	}
	if m.top < 0 {
		m.top = 0
	}
	m.syncDetail()
}

func indexOf(vis []*entry, seq uint64) int {
	for i, e := range vis {
		if e.m.Seq == seq {
			return i
		}
	}
	return -1
}

// syncDetail refills the detail pane when the selected message, its pair or
// the pane's size changed, keeping the scroll position if it is the same
// message.
func (m *Model) syncDetail() {
	l := m.layout()
	m.detail.Width, m.detail.Height = l.width, l.detailRows
	e := m.selected()
	key := ""
	if e != nil {
		key = fmt.Sprintf("%d/%d/%d", e.m.Seq, e.rev, l.width)
		if p := m.partner(e); p != nil {
			key += fmt.Sprintf("/%d", p.rev)
		}
	}
	if key == m.detailKey {
		return
	}
	sameSeq := e != nil && strings.HasPrefix(m.detailKey, fmt.Sprintf("%d/", e.m.Seq))
	m.detailKey = key
	m.detail.SetContent(m.detailText(e, l.width))
	if !sameSeq {
		m.detail.GotoTop()
	}
}

// key handles one key press.
func (m *Model) key(k tea.KeyMsg) tea.Cmd {
	if m.prompting {
		m.promptKey(k)
		return nil
	}
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 {
		return m.runes(k)
	}
	s := k.String()
	if s != "q" && s != "ctrl+c" {
		m.confirmQuit = false
	}
	// A status message answers the key before; the next key clears it.
	m.setStatus("")
	if m.help {
		m.help = false
		if s != "q" && s != "ctrl+c" {
			return nil
		}
	}
	switch s {
	case "ctrl+c":
		return tea.Quit
	case "q":
		return m.quit()
	case "?":
		m.help = true
	case "/":
		m.prompting, m.input, m.before = true, m.text, m.text
	case "esc":
		m.dirFilter, m.kindFilter, m.text = 0, 0, ""
		m.setStatus("filters cleared")
	case ">":
		m.dirFilter = (m.dirFilter + 1) % len(dirFilters)
	case "t":
		m.kindFilter = (m.kindFilter + 1) % len(kindFilters)
	case "tab", "enter":
		if m.focus == listPane {
			m.focus = detailPane
		} else {
			m.focus = listPane
		}
	case "up", "k":
		m.scroll(-1)
	case "down", "j":
		m.scroll(1)
	case "pgup", "ctrl+b":
		m.scroll(-m.pageSize())
	case "pgdown", "ctrl+f", " ":
		m.scroll(m.pageSize())
	case "home", "g":
		m.scroll(-1 << 30)
	case "end", "G":
		m.scroll(1 << 30)
	case "p":
		m.jumpPair()
	case "n":
		m.nextHeld()
	case "i":
		m.toggleIntercept()
	case "f":
		m.decide("forward")
	case "d":
		m.decide("drop")
	case "m":
		return m.modify()
	case "r":
		m.replay()
	case "s":
		return m.save()
	}
	return nil
}

// runes handles several characters read at once. Keys typed quickly (or
// sent by tmux send-keys) arrive as one message; each is its own command.
// Pasted text is not: outside the prompt it is ignored, so that a paste
// can never forward or drop a message.
func (m *Model) runes(k tea.KeyMsg) tea.Cmd {
	if k.Paste {
		m.setErr("pasted text is ignored here; / opens the filter prompt")
		return nil
	}
	var cmds []tea.Cmd
	for _, r := range k.Runes {
		if c := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}); c != nil {
			cmds = append(cmds, c)
		}
	}
	switch len(cmds) {
	case 0:
		return nil
	case 1:
		return cmds[0]
	}
	return tea.Sequence(cmds...)
}

func (m *Model) promptKey(k tea.KeyMsg) {
	switch k.Type {
	case tea.KeyEnter:
		m.prompting = false
		m.text = m.input
	case tea.KeyEsc:
		m.prompting = false
		m.text = m.before
	case tea.KeyBackspace:
		if r := []rune(m.input); len(r) > 0 {
			m.input = string(r[:len(r)-1])
		}
		m.text = m.input
	case tea.KeyCtrlU:
		m.input, m.text = "", ""
	case tea.KeyRunes, tea.KeySpace:
		if len(m.input) < 200 {
			m.input += sanitize(string(k.Runes))
		}
		m.text = m.input
	case tea.KeyCtrlC:
		m.prompting = false
		m.text = m.before
	}
}

func (m *Model) pageSize() int {
	if m.focus == detailPane {
		return max(1, m.layout().detailRows-1)
	}
	return max(1, m.layout().listRows-1)
}

// scroll moves the selection (list focus) or the detail text (detail focus)
// by n lines.
func (m *Model) scroll(n int) {
	if m.focus == detailPane {
		if n < 0 {
			m.detail.ScrollUp(-n)
		} else {
			m.detail.ScrollDown(n)
		}
		return
	}
	vis := m.visible()
	if len(vis) == 0 {
		return
	}
	i := indexOf(vis, m.sel)
	if i < 0 {
		i = len(vis) - 1
	}
	i = min(max(i+n, 0), len(vis)-1)
	m.sel = vis[i].m.Seq
	m.follow = i == len(vis)-1
}

// selectSeq selects a message, clearing the filters if they hide it.
func (m *Model) selectSeq(seq uint64) {
	if indexOf(m.visible(), seq) < 0 {
		m.dirFilter, m.kindFilter, m.text = 0, 0, ""
	}
	m.sel = seq
	vis := m.visible()
	m.follow = len(vis) > 0 && vis[len(vis)-1].m.Seq == seq
}

func (m *Model) jumpPair() {
	e := m.selected()
	p := m.partner(e)
	switch {
	case e == nil:
		m.setErr("no message selected")
	case p == nil && e.m.Kind == "request":
		m.setErr(fmt.Sprintf("#%d has no answer yet", e.m.Seq))
	case p == nil:
		m.setErr(fmt.Sprintf("#%d is not part of a request/response pair", e.m.Seq))
	default:
		m.selectSeq(p.m.Seq)
		m.setStatus(fmt.Sprintf("#%d pairs with #%d", p.m.Seq, e.m.Seq))
	}
}

// nextHeld selects the next held message after the selection, wrapping.
func (m *Model) nextHeld() {
	var first, next *entry
	for _, e := range m.entries {
		if !e.held {
			continue
		}
		if first == nil {
			first = e
		}
		if next == nil && e.m.Seq > m.sel {
			next = e
		}
	}
	if next == nil {
		next = first
	}
	if next == nil {
		m.setStatus("no message is held")
		return
	}
	m.selectSeq(next.m.Seq)
}

func (m *Model) send(c lite.InspectCommand) error {
	if m.ended {
		return fmt.Errorf("the session has ended: %w", catalog.ErrConnectionLost)
	}
	if m.opts.Send == nil {
		return fmt.Errorf("not connected to the daemon: %w", catalog.ErrConnectionLost)
	}
	return m.opts.Send(c)
}

func (m *Model) toggleIntercept() {
	on := !m.intercept
	if err := m.send(lite.InspectCommand{Intercept: &on}); err != nil {
		m.setErr(err.Error())
		return
	}
	if on {
		m.setStatus("asking the daemon to switch intercept on...")
	} else {
		m.setStatus("asking the daemon to switch intercept off...")
	}
}

// heldTarget returns the selected message if it is held. If it is not, it
// selects the oldest held message instead and returns nil: a decision only
// ever applies to a message the user has in front of them.
func (m *Model) heldTarget(verb string) *entry {
	e := m.selected()
	if e != nil && e.held {
		if e.asked != "" {
			m.setErr(fmt.Sprintf("#%d: already asked to %s it; waiting for the daemon", e.m.Seq, e.asked))
			return nil
		}
		return e
	}
	for _, h := range m.entries {
		if h.held {
			m.selectSeq(h.m.Seq)
			m.setStatus(fmt.Sprintf("selected held message #%d; press %s again to %s it", h.m.Seq, verbKey[verb], verb))
			return nil
		}
	}
	m.setErr("no message is held (i switches intercept on)")
	return nil
}

var verbKey = map[string]string{"forward": "f", "drop": "d", "modify": "m"}

func (m *Model) decide(verb string) {
	e := m.heldTarget(verb)
	if e == nil {
		return
	}
	c := lite.InspectCommand{Forward: e.m.Seq}
	if verb == "drop" {
		c = lite.InspectCommand{Drop: e.m.Seq}
	}
	if err := m.send(c); err != nil {
		m.setErr(err.Error())
		return
	}
	e.asked = verb
	e.rev++
	m.setStatus(fmt.Sprintf("%s #%d: sent", verb, e.m.Seq))
}

// modify writes the held message, pretty-printed, to a private temporary
// file and opens the editor on it; edited() reads it back.
func (m *Model) modify() tea.Cmd {
	e := m.heldTarget("modify")
	if e == nil {
		return nil
	}
	if m.editing != 0 {
		m.setErr(fmt.Sprintf("already editing #%d", m.editing))
		return nil
	}
	f, err := os.CreateTemp("", fmt.Sprintf("contextd-inspect-%d-*.json", e.m.Seq))
	if err != nil {
		m.setErr(fmt.Sprintf("modify #%d: temporary file: %v", e.m.Seq, err))
		return nil
	}
	body, ok := indent(e.m.Raw)
	if !ok {
		body = string(e.m.Raw)
	}
	if _, err := f.WriteString(body + "\n"); err != nil {
		f.Close()
		os.Remove(f.Name())
		m.setErr(fmt.Sprintf("modify #%d: write %s: %v", e.m.Seq, f.Name(), err))
		return nil
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		m.setErr(fmt.Sprintf("modify #%d: write %s: %v", e.m.Seq, f.Name(), err))
		return nil
	}
	m.editing = e.m.Seq
	seq, path := e.m.Seq, f.Name()
	editor := m.editor()
	// Through sh, as git runs core.editor: EDITOR may carry arguments
	// ("code --wait"). The path goes in as "$1", never into the script.
	c := exec.Command("sh", "-c", editor+` "$1"`, "sh", path)
	m.setStatus(fmt.Sprintf("editing #%d with %s", seq, editor))
	return tea.ExecProcess(c, func(err error) tea.Msg { return editedMsg{seq: seq, path: path, err: err} })
}

func (m *Model) editor() string {
	if m.opts.Editor != "" {
		return m.opts.Editor
	}
	if e := os.Getenv("EDITOR"); strings.TrimSpace(e) != "" {
		return e
	}
	return "vi"
}

// edited sends the edited message as the held one's replacement, if it is
// one valid JSON value that differs from the original; otherwise the message
// stays held and the status line says why.
func (m *Model) edited(msg editedMsg) {
	m.editing = 0
	b, readErr := os.ReadFile(msg.path)
	os.Remove(msg.path)
	e := m.bySeq[msg.seq]
	switch {
	case msg.err != nil:
		m.setErr(fmt.Sprintf("modify #%d: the editor failed (%v); the message is still held", msg.seq, msg.err))
		return
	case readErr != nil:
		m.setErr(fmt.Sprintf("modify #%d: read the edited file: %v; the message is still held", msg.seq, readErr))
		return
	case e == nil || !e.held:
		m.setErr(fmt.Sprintf("modify #%d: it is no longer held (decided meanwhile); the edit was discarded", msg.seq))
		return
	}
	raw, err := compactMessage(b)
	if err != nil {
		m.setErr(fmt.Sprintf("modify #%d: %v; the message is still held", msg.seq, err))
		return
	}
	if orig, err := compactMessage(e.m.Raw); err == nil && string(orig) == string(raw) {
		m.setStatus(fmt.Sprintf("modify #%d: no change; the message is still held (f forwards it)", msg.seq))
		return
	}
	if err := m.send(lite.InspectCommand{Modify: &lite.InspectModify{Seq: msg.seq, Raw: raw}}); err != nil {
		m.setErr(err.Error())
		return
	}
	e.asked = "modify"
	e.rev++
	m.setStatus(fmt.Sprintf("modify #%d: sent %d bytes", msg.seq, len(raw)))
}

func (m *Model) replay() {
	e := m.selected()
	switch {
	case e == nil:
		m.setErr("no message selected")
		return
	case e.m.Kind != "request" || e.m.Dir != "client->server":
		m.setErr(fmt.Sprintf("#%d is not a client request; only those can be replayed", e.m.Seq))
		return
	}
	if err := m.send(lite.InspectCommand{Replay: e.m.Seq}); err != nil {
		m.setErr(err.Error())
		return
	}
	m.setStatus(fmt.Sprintf("replay of #%d sent; the server's answer is recorded, not passed to the client", e.m.Seq))
}

// quit ends the program, asking once more while intercept is on or messages
// are held: leaving then keeps the agent waiting until someone decides.
func (m *Model) quit() tea.Cmd {
	held := 0
	for _, e := range m.entries {
		if e.held {
			held++
		}
	}
	if m.ended || m.confirmQuit || (!m.intercept && held == 0) {
		return tea.Quit
	}
	m.confirmQuit = true
	m.setErr(fmt.Sprintf("intercept is %s and %d held: q again quits anyway (they stay held), i switches intercept off", onOff(m.intercept), held))
	return nil
}

func (m *Model) setStatus(s string) { m.status, m.statusErr = s, false }
func (m *Model) setErr(s string)    { m.status, m.statusErr = s, true }

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "off"
}

// errNotMessage classifies edits that are not one JSON-RPC message.
var errNotMessage = errors.New("not one JSON object or array")
