package inspect

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

func TestMain(m *testing.M) {
	// Plain text: any escape sequence in a view is then one that leaked from
	// a message, which the tests look for.
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// harness drives a Model the way a tea.Program would, recording the
// commands it sends to the daemon.
type harness struct {
	t    *testing.T
	m    *Model
	mu   sync.Mutex
	sent []lite.InspectCommand
	fail error
}

func newHarness(t *testing.T, hello lite.InspectHello) *harness {
	h := &harness{t: t}
	h.m = New(hello, Options{
		Send: func(c lite.InspectCommand) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.fail != nil {
				return h.fail
			}
			h.sent = append(h.sent, c)
			return nil
		},
		Dir: t.TempDir(),
		Now: func() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC) },
	})
	return h
}

// feed applies msgs in order and returns the last command.
func (h *harness) feed(msgs ...tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	for _, msg := range msgs {
		_, cmd = h.m.Update(msg)
	}
	return cmd
}

// keys presses each key; a word like "tab" or "up" is a named key, anything
// else is typed rune by rune.
func (h *harness) keys(ks ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range ks {
		for _, msg := range keyMsgs(k) {
			cmd = h.feed(msg)
		}
	}
	return cmd
}

var named = map[string]tea.KeyType{
	"tab": tea.KeyTab, "enter": tea.KeyEnter, "esc": tea.KeyEsc, "up": tea.KeyUp, "down": tea.KeyDown,
	"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
	"backspace": tea.KeyBackspace, "ctrl+c": tea.KeyCtrlC, "ctrl+u": tea.KeyCtrlU,
}

func keyMsgs(k string) []tea.Msg {
	if t, ok := named[k]; ok {
		return []tea.Msg{tea.KeyMsg{Type: t}}
	}
	var out []tea.Msg
	for _, r := range k {
		if r == ' ' {
			out = append(out, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
			continue
		}
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

func (h *harness) commands() []lite.InspectCommand {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]lite.InspectCommand(nil), h.sent...)
}

// view renders the screen and checks its geometry: exactly height lines,
// none wider than width, and no escape sequence (the profile is plain text,
// so one would have come from a message).
func (h *harness) view() string {
	h.t.Helper()
	v := h.m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != h.m.height {
		h.t.Fatalf("view has %d lines, want %d:\n%s", len(lines), h.m.height, v)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > h.m.width {
			h.t.Fatalf("line %d is %d columns wide, more than %d: %q", i+1, w, h.m.width, l)
		}
		for _, r := range l {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				h.t.Fatalf("line %d holds control character %U: %q", i+1, r, l)
			}
		}
	}
	return v
}

// line returns the first line of the view that contains sub, or fails.
func (h *harness) line(sub string) string {
	h.t.Helper()
	for _, l := range strings.Split(h.view(), "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	h.t.Fatalf("no line of the view contains %q:\n%s", sub, h.m.View())
	return ""
}

func (h *harness) noLine(sub string) {
	h.t.Helper()
	if strings.Contains(h.view(), sub) {
		h.t.Fatalf("the view contains %q:\n%s", sub, h.m.View())
	}
}

var t0 = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)

// msg builds a message event: seq, direction ("c" or "s"), kind, raw.
func msg(seq uint64, dir, kind, id, method, tool string, corr uint64, action, raw string) EventMsg {
	d := "client->server"
	if dir == "s" {
		d = "server->client"
	}
	return EventMsg{lite.InspectEvent{Message: &lite.InspectMessage{
		Seq: seq, Dir: d, Time: t0.Add(time.Duration(seq) * 5 * time.Millisecond), Kind: kind, ID: id,
		Method: method, Tool: tool, Corr: corr, Raw: json.RawMessage(raw), Action: action,
	}}}
}

func call(seq uint64, id, tool, text, action string) EventMsg {
	raw := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":{"message":%q}}}`, id, tool, text)
	return msg(seq, "c", "request", id, "tools/call", tool, seq, action, raw)
}

func answer(seq uint64, id string, corr uint64, text string) EventMsg {
	raw := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
	return msg(seq, "s", "response", id, "", "", corr, "forward", raw)
}

var hello = lite.InspectHello{Record: "rec-0123456789abcdef", Server: "everything", Target: "node index.js stdio"}

func on(b bool) *bool { return &b }

func TestPairing(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(
		msg(1, "c", "request", "0", "initialize", "", 1, "forward", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
		msg(2, "s", "response", "0", "", "", 1, "forward", `{"jsonrpc":"2.0","id":0,"result":{}}`),
		call(3, "1", "echo", "hi", "forward"),
		msg(4, "c", "request", "2", "tools/call", "nope", 4, "forward", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}`),
		msg(5, "s", "error", "2", "", "", 4, "forward", `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool"}}`),
		answer(6, "1", 3, "hi"),
	)
	// A request shows its answer's status and latency, a response the
	// request it answers.
	if l := h.line("   3 -> req"); !strings.Contains(l, "ok 15ms") || !strings.Contains(l, "tools/call echo") {
		t.Errorf("request row: %q", l)
	}
	if l := h.line("   4 -> req"); !strings.Contains(l, "err -32602 5ms") {
		t.Errorf("request answered by an error: %q", l)
	}
	if l := h.line("   6 <- resp"); !strings.Contains(l, "#3 15ms") || !strings.Contains(l, "tools/call echo") {
		t.Errorf("response row: %q", l)
	}
	// Following: the newest message is selected, its request marked as pair.
	if h.m.sel != 6 {
		t.Fatalf("selected %d, want 6 (following the stream)", h.m.sel)
	}
	if l := h.line("   3 -> req"); !strings.HasPrefix(l, "= ") {
		t.Errorf("the selected response's request is not marked as its pair: %q", l)
	}
	if l := h.line("   6 <- resp"); !strings.HasPrefix(l, "> ") {
		t.Errorf("selection mark: %q", l)
	}
	h.keys("p")
	if h.m.sel != 3 {
		t.Fatalf("p went to %d, want the request 3", h.m.sel)
	}
	h.line("answered by #6 (response) after 15ms")
	h.keys("p")
	if h.m.sel != 6 {
		t.Fatalf("p went back to %d, want 6", h.m.sel)
	}
	// A notification has no pair.
	h.feed(msg(7, "s", "notification", "", "notifications/message", "", 0, "forward", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`))
	h.keys("p")
	if h.m.sel != 7 || !h.m.statusErr {
		t.Errorf("p on a notification: sel %d, status %q", h.m.sel, h.m.status)
	}
}

func TestPairingOutOfOrder(t *testing.T) {
	h := newHarness(t, hello)
	// The daemon sends in Seq order, but a resent or late request must still
	// be paired with the response that came first.
	h.feed(answer(2, "1", 1, "x"), call(1, "1", "echo", "x", "forward"))
	if got := h.m.entries[0].m.Seq; got != 1 {
		t.Fatalf("entries not in Seq order: first is %d", got)
	}
	if h.m.bySeq[1].resp != 2 {
		t.Fatalf("request 1 not paired with its earlier response")
	}
	h.line("ok 5ms")
}

func TestFollowAndScroll(t *testing.T) {
	h := newHarness(t, hello)
	for i := uint64(1); i <= 30; i++ {
		h.feed(call(i, fmt.Sprint(i), "echo", "m", "forward"))
	}
	if h.m.sel != 30 {
		t.Fatalf("following: selected %d, want 30", h.m.sel)
	}
	h.line(">    30")
	h.noLine("    1 -> req") // scrolled past the first rows
	h.keys("up", "up")
	if h.m.sel != 28 || h.m.follow {
		t.Fatalf("up twice: sel %d follow %v", h.m.sel, h.m.follow)
	}
	h.feed(call(31, "31", "echo", "m", "forward"))
	if h.m.sel != 28 {
		t.Fatalf("a new message moved a selection the user had placed: %d", h.m.sel)
	}
	h.keys("home")
	if h.m.sel != 1 {
		t.Fatalf("home: %d", h.m.sel)
	}
	h.line(">     1 -> req")
	h.keys("pgdown")
	if h.m.sel <= 1 {
		t.Fatalf("pgdown did not move: %d", h.m.sel)
	}
	h.keys("end")
	h.feed(call(32, "32", "echo", "m", "forward"))
	if h.m.sel != 32 {
		t.Fatalf("end resumes following: sel %d", h.m.sel)
	}
}

func TestDetailPane(t *testing.T) {
	h := newHarness(t, hello)
	long := strings.Repeat("abcdefghij", 30)
	h.feed(call(1, "1", "echo", long, "forward"))
	v := h.view()
	if !strings.Contains(v, `"name": "echo"`) || !strings.Contains(v, `"method": "tools/call"`) {
		t.Fatalf("detail pane does not show the pretty-printed message:\n%s", v)
	}
	// A long string is wrapped, not cut: all of it can be scrolled to.
	text := h.m.detailText(h.m.selected(), 80)
	for _, l := range strings.Split(text, "\n") {
		if ansi.StringWidth(l) > 80 {
			t.Fatalf("detail line wider than the pane: %q", l)
		}
	}
	if !strings.Contains(strings.ReplaceAll(text, "\n", ""), long) {
		t.Fatalf("the wrapped detail lost part of the string:\n%s", text)
	}
	h.keys("tab")
	if h.m.focus != detailPane {
		t.Fatal("tab did not focus the detail pane")
	}
	h.keys("down", "down", "down")
	if h.m.detail.YOffset != 3 {
		t.Fatalf("down in the detail pane: offset %d, want 3", h.m.detail.YOffset)
	}
	if h.m.sel != 1 {
		t.Fatal("scrolling the detail moved the selection")
	}
	// An answer to the shown message updates it without losing the place.
	h.feed(answer(2, "1", 1, "ok"))
	if h.m.detail.YOffset != 3 || h.m.sel != 1 {
		t.Fatalf("after the answer: offset %d sel %d", h.m.detail.YOffset, h.m.sel)
	}
	h.keys("tab")
	h.keys("down")
	if h.m.sel != 2 || h.m.detail.YOffset != 0 {
		t.Fatalf("new selection: sel %d offset %d", h.m.sel, h.m.detail.YOffset)
	}

	// A modified message shows what was sent and the original.
	h.feed(EventMsg{lite.InspectEvent{Message: &lite.InspectMessage{Seq: 3, Dir: "client->server", Time: t0, Kind: "request",
		ID: "3", Method: "tools/call", Tool: "echo", Raw: json.RawMessage(`{"id":3,"params":{"x":"NEW"}}`),
		Original: json.RawMessage(`{"id":3,"params":{"x":"OLD"}}`), Action: "modify", Rule: "scrub-arguments"}}})
	h.keys("end")
	v = h.view()
	for _, want := range []string{"sent (modified):", `"x": "NEW"`, "original, as received:", "rule scrub-arguments"} {
		if !strings.Contains(v+h.m.detailText(h.m.selected(), 80), want) {
			t.Errorf("modified message detail lacks %q", want)
		}
	}
	if l := h.line("    3 -> req"); !strings.Contains(l, " mod ") {
		t.Errorf("modified row: %q", l)
	}
}

func TestFilters(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(
		msg(1, "c", "request", "0", "initialize", "", 1, "forward", `{"id":0}`),
		msg(2, "s", "response", "0", "", "", 1, "forward", `{"id":0,"result":{}}`),
		msg(3, "c", "notification", "", "notifications/initialized", "", 0, "forward", `{}`),
		call(4, "1", "echo", "a", "forward"),
		answer(5, "1", 4, "a"),
		call(6, "2", "get-sum", "b", "forward"),
		msg(7, "s", "request", "9", "sampling/createMessage", "", 7, "forward", `{"id":9}`),
	)
	seqs := func() []uint64 {
		var out []uint64
		for _, e := range h.m.visible() {
			out = append(out, e.m.Seq)
		}
		return out
	}
	tests := []struct {
		name string
		keys []string
		want []uint64
	}{
		{"all", nil, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"client to server", []string{">"}, []uint64{1, 3, 4, 6}},
		{"server to client", []string{">", ">"}, []uint64{2, 5, 7}},
		{"direction wraps to all", []string{">", ">", ">"}, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"requests", []string{"t"}, []uint64{1, 4, 6, 7}},
		{"responses", []string{"t", "t"}, []uint64{2, 5}},
		{"client requests", []string{">", "t"}, []uint64{1, 4, 6}},
		// A response matches by its request's method and tool.
		{"text", []string{"/", "echo", "enter"}, []uint64{4, 5}},
		{"text case-insensitive", []string{"/", "SAMPLING", "enter"}, []uint64{7}},
		{"text and direction", []string{"/", "echo", "enter", ">", ">"}, []uint64{5}},
		{"text typed then cancelled", []string{"/", "echo", "esc"}, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"backspace", []string{"/", "echox", "backspace", "enter"}, []uint64{4, 5}},
		{"esc clears all", []string{">", "t", "/", "echo", "enter", "esc"}, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"nothing matches", []string{"/", "zzz", "enter"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			h.m.dirFilter, h.m.kindFilter, h.m.text = 0, 0, ""
			h.keys(tc.keys...)
			if got := seqs(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("visible %v, want %v", got, tc.want)
			}
			v := h.view()
			if tc.want == nil && !strings.Contains(v, "no message matches the filters") {
				t.Fatalf("empty list not explained:\n%s", v)
			}
			if tc.want != nil && indexOf(h.m.visible(), h.m.sel) < 0 {
				t.Fatalf("selection %d is not a listed message", h.m.sel)
			}
		})
	}
	h.t = t
	// The prompt shows what is typed; filtering is live.
	h.m.dirFilter, h.m.kindFilter, h.m.text = 0, 0, ""
	h.keys("/", "get")
	h.line("filter method/tool: /get_")
	if got := seqs(); fmt.Sprint(got) != "[6]" {
		t.Fatalf("live filter: %v", got)
	}
	// While the prompt is open, keys are text, not commands.
	h.keys("q", "i")
	if !h.m.prompting || len(h.commands()) != 0 {
		t.Fatal("keys typed in the prompt acted as commands")
	}
	h.keys("enter")
	h.line(`text "getqi"`)
}

func TestHeldAlwaysListed(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(call(1, "1", "echo", "a", "forward"), call(2, "2", "get-sum", "b", "held"))
	h.keys("/", "echo", "enter")
	vis := h.m.visible()
	if len(vis) != 2 || vis[1].m.Seq != 2 {
		t.Fatalf("a held message was filtered out: %d listed", len(vis))
	}
}

func TestIntercept(t *testing.T) {
	h := newHarness(t, hello)
	h.line("intercept off")
	h.keys("i")
	cs := h.commands()
	if len(cs) != 1 || cs[0].Intercept == nil || !*cs[0].Intercept {
		t.Fatalf("i sent %+v, want Intercept true", cs)
	}
	// The switch follows the daemon's word, not the key.
	if h.m.intercept {
		t.Fatal("intercept flipped before the daemon confirmed it")
	}
	h.feed(EventMsg{lite.InspectEvent{Intercept: on(true)}})
	h.line("intercept ON")
	h.keys("i")
	cs = h.commands()
	if len(cs) != 2 || cs[1].Intercept == nil || *cs[1].Intercept {
		t.Fatalf("second i sent %+v, want Intercept false", cs[1:])
	}
	h.feed(EventMsg{lite.InspectEvent{Intercept: on(false)}})
	h.line("intercept off")
	// A send that fails is reported, not swallowed.
	h.fail = fmt.Errorf("queue full: %w", catalog.ErrConnectionLost)
	h.keys("i")
	if !h.m.statusErr || !strings.Contains(h.m.status, "queue full") {
		t.Fatalf("failed send not reported: %q", h.m.status)
	}
}

func TestHeldForwardDrop(t *testing.T) {
	h := newHarness(t, lite.InspectHello{Record: "r1", Server: "s", Intercept: true})
	h.feed(call(1, "1", "echo", "a", "forward"), answer(2, "1", 1, "a"), call(3, "2", "echo", "held one", "held"),
		call(4, "3", "echo", "held two", "held"))
	h.line("2 HELD")
	l := h.line("    3 -> req")
	if !strings.HasPrefix(l[1:], "!") || !strings.Contains(l, "HELD") {
		t.Fatalf("held row not marked: %q", l)
	}
	// The selection (following) is the newest held message, 4.
	h.keys("f")
	cs := h.commands()
	if len(cs) != 1 || cs[0].Forward != 4 {
		t.Fatalf("f sent %+v, want Forward 4", cs)
	}
	if l := h.line("    4 -> req"); !strings.Contains(l, "fwd?") {
		t.Errorf("asked-for forward not shown: %q", l)
	}
	// Asking twice before the daemon answers sends nothing more.
	h.keys("f")
	if len(h.commands()) != 1 {
		t.Fatal("a second f on the same message sent again")
	}
	h.feed(EventMsg{lite.InspectEvent{Decided: 4}})
	if l := h.line("    4 -> req"); !strings.Contains(l, " fwd ") || strings.Contains(l, "HELD") {
		t.Errorf("forwarded row: %q", l)
	}
	// On a message that is not held, f only selects the held one.
	h.keys("home")
	h.keys("f")
	if len(h.commands()) != 1 || h.m.sel != 3 {
		t.Fatalf("f on a non-held row: %d commands, sel %d", len(h.commands()), h.m.sel)
	}
	h.line("press f again")
	h.keys("d")
	cs = h.commands()
	if len(cs) != 2 || cs[1].Drop != 3 {
		t.Fatalf("d sent %+v, want Drop 3", cs[1:])
	}
	h.feed(EventMsg{lite.InspectEvent{Decided: 3}})
	if l := h.line("    3 -> req"); !strings.Contains(l, " drop ") || !strings.Contains(l, "dropped") {
		t.Errorf("dropped row: %q", l)
	}
	// Nothing held: f says so.
	h.keys("f")
	if !h.m.statusErr || !strings.Contains(h.m.status, "no message is held") {
		t.Fatalf("f with nothing held: %q", h.m.status)
	}
	// A message released elsewhere (intercept off in another inspector).
	h.feed(call(5, "4", "echo", "c", "held"), EventMsg{lite.InspectEvent{Decided: 5}})
	if l := h.line("    5 -> req"); !strings.Contains(l, " rel ") {
		t.Errorf("released row: %q", l)
	}
	// Then the daemon sends the message with its verdict: that action shows.
	h.feed(call(5, "4", "echo", "c", "blocked"))
	if l := h.line("    5 -> req"); !strings.Contains(l, " blkd ") {
		t.Errorf("released, then blocked row: %q", l)
	}
	// A held message announced without its id keeps the id it came with.
	h.feed(call(9, "77", "echo", "f", "forward"))
	held := call(9, "", "echo", "f", "held")
	held.Event.Message.ID = ""
	h.feed(held)
	if l := h.line("    9 -> req"); !strings.Contains(l, " 77 ") || !strings.Contains(l, "HELD") {
		t.Errorf("held re-announcement lost the id: %q", l)
	}
	// n finds held messages, wrapping around.
	h.feed(call(6, "5", "echo", "d", "held"), call(7, "6", "echo", "e", "forward"), call(8, "7", "echo", "e", "held"))
	h.keys("home", "n")
	if h.m.sel != 6 {
		t.Fatalf("n: %d, want 6", h.m.sel)
	}
	h.keys("n")
	if h.m.sel != 8 {
		t.Fatalf("n: %d, want 8", h.m.sel)
	}
	h.keys("n")
	if h.m.sel != 9 {
		t.Fatalf("n: %d, want 9", h.m.sel)
	}
	h.keys("n")
	if h.m.sel != 6 {
		t.Fatalf("n wraps: %d, want 6", h.m.sel)
	}
}

func TestModify(t *testing.T) {
	h := newHarness(t, lite.InspectHello{Record: "r1", Intercept: true})
	h.feed(call(1, "1", "echo", "hello", "held"))
	cmd := h.keys("m")
	if cmd == nil || h.m.editing != 1 {
		t.Fatalf("m did not start the editor (editing %d)", h.m.editing)
	}
	files, _ := filepath.Glob(filepath.Join(os.TempDir(), "contextd-inspect-1-*.json"))
	var path string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), `"message": "hello"`) {
			path = f
		}
	}
	if path == "" {
		t.Fatalf("no temporary file with the pretty-printed message among %v", files)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("temporary file mode: %v %v", fi.Mode(), err)
	}

	edit := func(content string, runErr error) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		h.feed(editedMsg{seq: 1, path: path, err: runErr})
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("temporary file left behind: %v", err)
		}
	}
	tests := []struct {
		name    string
		content string
		runErr  error
		status  string
	}{
		{"invalid JSON", `{"jsonrpc":`, nil, "not valid JSON"},
		{"empty", "  \n", nil, "empty"},
		{"not an object", `"just a string"`, nil, "JSON object"},
		{"unchanged", "{\n  \"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/call\",\n \"params\": {\"name\": \"echo\", \"arguments\": {\"message\": \"hello\"}}}", nil, "no change"},
		{"editor failed", `{"x":1}`, errors.New("exit status 1"), "editor failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			h.m.editing = 1
			edit(tc.content, tc.runErr)
			if len(h.commands()) != 0 {
				t.Fatalf("sent %+v", h.commands())
			}
			if !strings.Contains(h.m.status, tc.status) {
				t.Fatalf("status %q, want it to mention %q", h.m.status, tc.status)
			}
			if !h.m.bySeq[1].held || h.m.editing != 0 {
				t.Fatal("the message is no longer held, or still marked as being edited")
			}
			h.line("HELD")
		})
	}
	h.t = t
	h.m.editing = 1
	edit("{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"method\": \"tools/call\",\n  \"params\": {\"name\": \"echo\", \"arguments\": {\"message\": \"bye\"}}\n}\n", nil)
	cs := h.commands()
	if len(cs) != 1 || cs[0].Modify == nil || cs[0].Modify.Seq != 1 {
		t.Fatalf("sent %+v, want one Modify of 1", cs)
	}
	if got := string(cs[0].Modify.Raw); got != `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}` {
		t.Fatalf("modified message not compacted as sent: %s", got)
	}
	h.line("mod?")
	// The daemon confirms with the message as sent and its original.
	h.feed(EventMsg{lite.InspectEvent{Message: &lite.InspectMessage{Seq: 1, Dir: "client->server", Time: t0, Kind: "request",
		ID: "1", Method: "tools/call", Tool: "echo", Raw: cs[0].Modify.Raw, Original: h.m.bySeq[1].m.Raw, Action: "modify"}}},
		EventMsg{lite.InspectEvent{Decided: 1}})
	if l := h.line("    1 -> req"); !strings.Contains(l, " mod ") {
		t.Errorf("modified row: %q", l)
	}
	if len(h.m.entries) != 1 {
		t.Fatalf("a resent Seq became a second row: %d rows", len(h.m.entries))
	}
	// An edit that comes back after the message was decided is discarded.
	h.m.editing = 1
	edit(`{"x":2}`, nil)
	if len(h.commands()) != 1 || !strings.Contains(h.m.status, "no longer held") {
		t.Fatalf("late edit: %q, %d commands", h.m.status, len(h.commands()))
	}
}

// TestModifyWithEditor runs a real tea.Program and a real editor process: a
// script that rewrites the argument in place, as the tmux test's EDITOR does.
func TestModifyWithEditor(t *testing.T) {
	dir := t.TempDir()
	editor := filepath.Join(dir, "edit.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nexec sed -i 's/\"hello\"/\"edited by sed\"/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sent := make(chan lite.InspectCommand, 4)
	m := New(lite.InspectHello{Record: "r", Intercept: true}, Options{
		Send:   func(c lite.InspectCommand) error { sent <- c; return nil },
		Editor: editor,
		Dir:    dir,
	})
	// A pipe stands for the keyboard: nothing is typed on it, keys come
	// through Send, but the program reads it as it reads a terminal.
	keyboard, typist, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer typist.Close()
	defer keyboard.Close()
	p := tea.NewProgram(m, tea.WithInput(keyboard), tea.WithOutput(io.Discard), tea.WithoutSignalHandler())
	done := make(chan error, 1)
	go func() { _, err := p.Run(); done <- err }()
	p.Send(call(1, "1", "echo", "hello", "held"))
	p.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'m'}})
	select {
	case c := <-sent:
		if c.Modify == nil || c.Modify.Seq != 1 || !strings.Contains(string(c.Modify.Raw), `"message":"edited by sed"`) {
			t.Fatalf("sent %+v (%s)", c, c.Modify.Raw)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Modify sent after the editor ran")
	}
	p.Quit()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestSave(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(call(1, "1", "echo", "a", "forward"), answer(2, "1", 1, "a"), call(3, "2", "echo", "b", "held"),
		EventMsg{lite.InspectEvent{Intercept: on(true)}})
	var paths []string
	for range 2 {
		cmd := h.keys("s")
		if cmd == nil {
			t.Fatal("s returned no command")
		}
		h.feed(cmd())
		if h.m.statusErr || !strings.HasPrefix(h.m.status, "saved the session to ") {
			t.Fatalf("status after save: %q", h.m.status)
		}
		paths = append(paths, strings.TrimPrefix(h.m.status, "saved the session to "))
	}
	if paths[0] == paths[1] {
		t.Fatal("a second save overwrote the first")
	}
	for _, p := range paths {
		if filepath.Dir(p) != h.m.opts.Dir || !strings.HasPrefix(filepath.Base(p), "contextd-inspect-rec-0123-20260304-050607") {
			t.Fatalf("save path %s", p)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("saved file: %v %v", fi, err)
		}
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var s Saved
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("saved file is not JSON: %v", err)
	}
	if s.Record != hello.Record || s.Server != "everything" || !s.Intercept || len(s.Messages) != 3 {
		t.Fatalf("saved %+v", s)
	}
	if s.Messages[0].Answer != 2 || !s.Messages[2].Held || string(s.Messages[1].Raw) != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a"}]}}` {
		t.Fatalf("saved messages %+v", s.Messages)
	}
	// A directory that cannot be written to is reported.
	h.m.opts.Dir = filepath.Join(h.m.opts.Dir, "missing")
	h.feed(h.keys("s")())
	if !h.m.statusErr || !strings.Contains(h.m.status, "save:") {
		t.Fatalf("failed save: %q", h.m.status)
	}
	if _, err := writeSaved(h.m.opts.Dir, &s); !errors.Is(err, catalog.ErrIO) {
		t.Fatalf("writeSaved into a missing dir: %v, want ErrIO", err)
	}
	// The default, the working directory, is named as such: short enough for
	// the status line.
	t.Chdir(t.TempDir())
	p, err := writeSaved(".", &s)
	if err != nil || p != "./contextd-inspect-rec-0123-20260304-050607.json" {
		t.Fatalf("save in the working directory: %q, %v", p, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
}

func TestReplay(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(call(1, "1", "echo", "a", "forward"), answer(2, "1", 1, "a"),
		msg(3, "s", "request", "7", "roots/list", "", 3, "forward", `{"id":7}`))
	h.keys("r")
	if len(h.commands()) != 0 || !h.m.statusErr {
		t.Fatal("r replayed a server request")
	}
	h.keys("up", "r")
	if len(h.commands()) != 0 {
		t.Fatal("r replayed a response")
	}
	h.keys("up", "r")
	cs := h.commands()
	if len(cs) != 1 || cs[0].Replay != 1 {
		t.Fatalf("r sent %+v, want Replay 1", cs)
	}
}

func TestEndedAndErrors(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(call(1, "1", "echo", "a", "forward"),
		EventMsg{lite.InspectEvent{Error: &catalog.Detail{Code: catalog.ErrPolicy.Code, Message: "replay refused"}}})
	if l := h.line("CTXD-E051"); !strings.Contains(l, "replay refused") {
		t.Fatalf("error event: %q", l)
	}
	h.feed(EventMsg{lite.InspectEvent{Ended: true}})
	h.line("SESSION ENDED")
	h.keys("i", "r")
	if len(h.commands()) != 0 || !strings.Contains(h.m.status, "ended") {
		t.Fatalf("commands after the end: %+v, %q", h.commands(), h.m.status)
	}
	if cmd := h.keys("q"); cmd == nil || fmt.Sprint(cmd()) != fmt.Sprint(tea.Quit()) {
		t.Fatal("q after the end does not quit at once")
	}

	h2 := newHarness(t, hello)
	h2.feed(ClosedMsg{Err: errors.New("read: connection reset by peer")})
	h2.line("CONNECTION CLOSED")
	h2.line("connection reset by peer")
}

func TestQuitConfirm(t *testing.T) {
	h := newHarness(t, lite.InspectHello{Intercept: true})
	if cmd := h.keys("q"); cmd != nil {
		t.Fatal("q with intercept on quit without asking")
	}
	h.line("q again quits anyway")
	if cmd := h.keys("q"); cmd == nil || fmt.Sprint(cmd()) != fmt.Sprint(tea.Quit()) {
		t.Fatal("second q did not quit")
	}
	h2 := newHarness(t, hello)
	if cmd := h2.keys("q"); cmd == nil {
		t.Fatal("q with intercept off and nothing held did not quit")
	}
	if cmd := h2.keys("ctrl+c"); cmd == nil {
		t.Fatal("ctrl+c did not quit")
	}
}

// TestKeysReadTogether: keys that arrive in one read (typed fast, or sent
// by tmux send-keys) are one message with several runes; each still acts.
// Pasted text does not.
func TestKeysReadTogether(t *testing.T) {
	h := newHarness(t, lite.InspectHello{Intercept: true})
	h.feed(call(1, "1", "echo", "a", "forward"), call(2, "2", "echo", "b", "held"))
	h.keys("home")
	h.feed(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("nf")})
	cs := h.commands()
	if len(cs) != 1 || cs[0].Forward != 2 {
		t.Fatalf("n and f read together sent %+v, want Forward 2", cs)
	}
	h.feed(call(3, "3", "echo", "c", "held"))
	h.feed(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ndf"), Paste: true})
	if len(h.commands()) != 1 || !strings.Contains(h.m.status, "pasted text is ignored") {
		t.Fatalf("a paste acted: %+v, %q", h.commands(), h.m.status)
	}
	// In the prompt, runes read together are text.
	h.feed(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("/ec")}, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("ho")})
	if !h.m.prompting || h.m.input != "echo" {
		t.Fatalf("prompt input %q (prompting %v)", h.m.input, h.m.prompting)
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t, hello)
	h.feed(call(1, "1", "echo", "a", "forward"))
	h.keys("?")
	h.line("Any key closes this help.")
	h.line("forward, drop, or edit")
	h.keys("i") // closes help, does nothing else
	if h.m.help || len(h.commands()) != 0 {
		t.Fatal("the key that closed help also acted")
	}
	h.noLine("Any key closes this help.")
}

// TestViewGeometry checks every screen state against the terminal size: the
// view is exactly as tall as the terminal and no line is wider, including
// hostile content (escape sequences, wide characters, huge ids).
func TestViewGeometry(t *testing.T) {
	hostile := []tea.Msg{
		msg(1, "c", "invalid", "", "", "", 0, "forward", "\x1b]0;owned\x07\x1b[2J\x9b31m not json \r\n\t\xff\xfe"),
		msg(2, "c", "request", strings.Repeat("9", 200), "tools/call", "\x1b[31m"+strings.Repeat("wide-工具", 20), 2, "held",
			`{"jsonrpc":"2.0","id":`+strings.Repeat("9", 200)+`,"method":"tools/call","params":{"name":"x","arguments":{"t":"\u202eabc 漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字漢字"}}}`),
		msg(3, "s", "error", `"abc"`, "", "", 2, "forward", `{"jsonrpc":"2.0","id":"abc","error":{"code":-32000000000000000000,"message":"x"}}`),
		msg(4, "s", "notification", "", "notifications/"+strings.Repeat("progress", 30), "", 0, "weird-action", `{}`),
		EventMsg{lite.InspectEvent{Hello: &lite.InspectHello{Record: "\x1b[H" + strings.Repeat("r", 300), Server: "srv\x07\x1b[1m" + strings.Repeat("S", 300)}}},
	}
	for i := uint64(5); i < 60; i++ {
		hostile = append(hostile, call(i, fmt.Sprint(i), "echo", strings.Repeat("x", int(i)*7), "forward"))
	}
	sizes := [][2]int{{80, 24}, {120, 40}, {50, 12}, {49, 12}, {80, 11}, {20, 5}, {1, 1}, {300, 100}}
	states := []struct {
		name string
		keys []string
	}{
		{"plain", nil},
		{"help", []string{"?"}},
		{"prompt", []string{"/", "\x1b[2Jecho"}},
		{"detail focus scrolled", []string{"home", "down", "tab", "pgdown", "pgdown"}},
		{"filtered", []string{">", "t", "t"}},
		{"status error", []string{"r", "r"}},
	}
	for _, size := range sizes {
		for _, st := range states {
			t.Run(fmt.Sprintf("%dx%d/%s", size[0], size[1], st.name), func(t *testing.T) {
				h := newHarness(t, hello)
				h.feed(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
				h.feed(hostile...)
				h.keys(st.keys...)
				v := h.view()
				if strings.Contains(v, "owned") && !strings.Contains(v, `\x1b]0;owned`) {
					t.Fatalf("escape sequence reached the screen:\n%s", v)
				}
			})
		}
	}
	// Before any size arrives, the model assumes 80x24.
	h := newHarness(t, hello)
	h.feed(hostile...)
	h.view()
	if h.m.width != 80 || h.m.height != 24 {
		t.Fatalf("default size %dx%d", h.m.width, h.m.height)
	}
}

// TestView80x24 pins down the screen an SSH user sees.
func TestView80x24(t *testing.T) {
	h := newHarness(t, lite.InspectHello{Record: "rec-42", Server: "everything", Intercept: true})
	h.feed(
		msg(1, "c", "request", "0", "initialize", "", 1, "forward", `{"jsonrpc":"2.0","id":0,"method":"initialize"}`),
		msg(2, "s", "response", "0", "", "", 1, "forward", `{"jsonrpc":"2.0","id":0,"result":{}}`),
		call(3, "1", "echo", "hello", "held"),
	)
	lines := strings.Split(h.view(), "\n")
	wantStart := []string{
		" contextd inspect | intercept ON | 3 msgs, 1 HELD | everything | rec rec-42",
		"    seq    kind  method / tool                 id       size act  answer",
		"      1 -> req   initialize                    0         46B fwd  ok 5ms",
		"      2 <- resp  initialize                    0         36B fwd  #1 5ms",
		">!    3 -> req   tools/call echo               1        103B HELD ...",
	}
	for i, want := range wantStart {
		if got := strings.TrimRight(lines[i], " "); got != want {
			t.Errorf("line %d:\n got %q\nwant %q", i+1, got, want)
		}
	}
	if !strings.HasPrefix(lines[11], "-- #3 client->server request HELD (f forward, m edit, d drop)") {
		t.Errorf("separator line: %q", lines[11])
	}
	if !strings.HasPrefix(lines[12], "#3 client->server request") {
		t.Errorf("first detail line: %q", lines[12])
	}
	if !strings.HasPrefix(lines[22], "filter: dir all (>)  kind all (t)  text - (/)  | 3 of 3 shown") {
		t.Errorf("status line: %q", lines[22])
	}
	if strings.TrimRight(lines[23], " ") != keyLine {
		t.Errorf("key line: %q", lines[23])
	}
}
