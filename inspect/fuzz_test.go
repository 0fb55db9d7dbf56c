package inspect

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/contextd/contextd/wire/lite"
)

// FuzzSanitize: whatever a message holds, what reaches the terminal is valid
// UTF-8 without control characters or bidi overrides, and clean text is left
// as it is.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "a\nb", "\x1b[2J", "\x9b31m", "\xff\xfe", "\u202eevil", "漢字", "\x00\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := sanitize(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
		}
		for i, w := 0, 0; i < len(out); i += w {
			r, n := utf8.DecodeRuneInString(out[i:])
			w = n
			if unsafeRune(r, n) {
				t.Fatalf("unsafe rune %U left in %q (from %q)", r, out, s)
			}
		}
		clean := true
		for i, w := 0, 0; i < len(s); i += w {
			r, n := utf8.DecodeRuneInString(s[i:])
			w = n
			clean = clean && !unsafeRune(r, n)
		}
		if clean && out != s {
			t.Fatalf("clean text changed: %q -> %q", s, out)
		}
		if strings.Contains(oneLine(s), "\n") {
			t.Fatalf("oneLine kept a newline: %q", oneLine(s))
		}
	})
}

// FuzzCompactMessage: an edit is accepted only as one JSON object or array,
// and what is sent is valid, compact and stable.
func FuzzCompactMessage(f *testing.F) {
	for _, s := range []string{`{"a":1}`, " [1, 2] ", `"s"`, `{`, ``, `{"a":1}{"b":2}`, "{\"a\":\"\x00\"}", `{"a":1e999}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := compactMessage(b)
		if err != nil {
			return
		}
		if !json.Valid(out) || (out[0] != '{' && out[0] != '[') {
			t.Fatalf("accepted %q as %q", b, out)
		}
		again, err := compactMessage(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not stable: %q -> %q (%v)", out, again, err)
		}
	})
}

// FuzzErrorCode: reading error.code out of any bytes never fails loudly and
// stays short enough for its column.
func FuzzErrorCode(f *testing.F) {
	for _, s := range []string{`{"error":{"code":-32601}}`, `{"error":{"code":"x"}}`, `{"error":1}`, `[`, `{"error":{"code":1e400}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if c := errorCode(b); len(c) > 12 {
			t.Fatalf("code %q too long", c)
		}
	})
}

// FuzzView feeds one message with arbitrary envelope fields and bytes, and
// checks that the screen keeps its geometry and shows no raw control
// character, at 80x24 and in the detail pane's width.
func FuzzView(f *testing.F) {
	f.Add("request", "client->server", "1", "tools/call", "echo", "held", []byte(`{"id":1}`), uint64(1))
	f.Add("invalid", "x", "\x1b]0;t\x07", "\x9b2J", "工具工具工具", "", []byte("\x1b[2J\xff"), uint64(7))
	f.Add("error", "server->client", `"a"`, "", "", "forward", []byte(`{"error":{"code":-1}}`), uint64(1))
	f.Fuzz(func(t *testing.T, kind, dir, id, method, tool, action string, raw []byte, corr uint64) {
		h := newHarness(t, hello)
		h.feed(call(1, "1", "echo", "x", "forward"),
			EventMsg{lite.InspectEvent{Message: &lite.InspectMessage{Seq: 2, Dir: dir, Time: t0, Kind: kind, ID: id,
				Method: method, Tool: tool, Corr: corr, Raw: json.RawMessage(raw), Action: action}}})
		h.view()
		h.keys("p", "tab", "pgdown")
		h.view()
		for _, l := range strings.Split(h.m.detailText(h.m.bySeq[2], 80), "\n") {
			if ansi.StringWidth(l) > 80 {
				t.Fatalf("detail line wider than 80: %q", l)
			}
		}
		h.feed(tea.WindowSizeMsg{Width: 50, Height: 12})
		h.view()
	})
}
