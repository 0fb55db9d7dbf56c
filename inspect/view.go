package inspect

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// The smallest screen the full layout fits; below it the view says so.
const (
	minWidth  = 50
	minHeight = 12
)

// Styles only add emphasis: every state they show is also spelled out in
// plain characters (">" selected, "=" its pair, "!" and HELD for a held
// message), so the view reads the same without colour.
var (
	styleTitle    = lipgloss.NewStyle().Bold(true).Reverse(true)
	styleHeader   = lipgloss.NewStyle().Bold(true)
	styleSelected = lipgloss.NewStyle().Reverse(true)
	stylePartner  = lipgloss.NewStyle().Underline(true)
	styleHeld     = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("3"))
	styleError    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("1"))
	styleDim      = lipgloss.NewStyle().Faint(true)
)

// layout is how the screen is divided: a title line, the list (a column
// header and listRows rows), a separator naming the detail pane, detailRows
// of detail, a status line and a key line.
type layout struct {
	width, height        int
	listRows, detailRows int
}

func (m *Model) layout() layout {
	w, h := max(m.width, 1), max(m.height, 1)
	body := h - 5 // title, column header, separator, status, keys
	list := max(body/2, 1)
	return layout{width: w, height: h, listRows: list, detailRows: max(body-list, 1)}
}

// View renders the whole screen: exactly height lines, none wider than width.
func (m *Model) View() string {
	l := m.layout()
	if l.width < minWidth || l.height < minHeight {
		msg := fmt.Sprintf("contextd inspect needs at least %dx%d; this terminal is %dx%d", minWidth, minHeight, l.width, l.height)
		return fit(ansi.Hardwrap(msg, l.width, true), l.width, l.height)
	}
	lines := make([]string, 0, l.height)
	lines = append(lines, styleTitle.Render(pad(m.titleLine(), l.width)))
	if m.help {
		lines = append(lines, m.helpLines(l.width, l.height-3)...)
	} else {
		lines = append(lines, styleHeader.Render(pad(m.columnHeader(l.width), l.width)))
		lines = append(lines, m.rows(l)...)
		lines = append(lines, styleHeader.Render(pad(m.separator(), l.width)))
		lines = append(lines, strings.Split(m.detail.View(), "\n")...)
	}
	lines = append(lines, m.statusLine(l.width), styleDim.Render(pad(keyLine, l.width)))
	return fit(strings.Join(lines, "\n"), l.width, l.height)
}

// fit makes s exactly h lines of at most w columns: a last guard, so that a
// miscounted line can never scroll the terminal.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	for i, line := range lines {
		if ansi.StringWidth(line) > w {
			lines[i] = ansi.Truncate(line, w, "")
		}
	}
	return strings.Join(lines, "\n")
}

// pad cuts or pads plain text to exactly w columns.
func pad(s string, w int) string {
	s = ansi.Truncate(s, w, "")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

func (m *Model) titleLine() string {
	held := 0
	for _, e := range m.entries {
		if e.held {
			held++
		}
	}
	// The state comes first, so that a narrow terminal cuts names, not it.
	s := " contextd inspect | "
	if m.ended {
		s += strings.ToUpper(m.endNote) + " | "
	}
	s += fmt.Sprintf("intercept %s | %d msgs", onOff(m.intercept), len(m.entries))
	if held > 0 {
		s += fmt.Sprintf(", %d HELD", held)
	}
	s += fmt.Sprintf(" | %s | rec %s", oneLine(m.hello.Server), shortID(oneLine(m.hello.Record)))
	return s
}

func shortID(s string) string {
	if ansi.StringWidth(s) > 12 {
		return ansi.Truncate(s, 12, "")
	}
	return s
}

// Column widths of a list row; the method column takes what is left.
const (
	colSeq    = 5
	colDir    = 2
	colKind   = 5
	colID     = 6
	colSize   = 6
	colAct    = 4
	colResult = 14
	// two marks, then the columns and the spaces between them, but method
	fixedCols = 2 + colSeq + 1 + colDir + 1 + colKind + 1 + 1 + colID + 1 + colSize + 1 + colAct + 1 + colResult
)

func methodWidth(w int) int { return max(w-fixedCols, 8) }

func (m *Model) columnHeader(w int) string {
	return fmt.Sprintf("%2s%*s %-*s %-*s %-*s %-*s %*s %-*s %s", "", colSeq, "seq", colDir, "", colKind, "kind",
		methodWidth(w), "method / tool", colID, "id", colSize, "size", colAct, "act", "answer")
}

// rows renders the listed part of the message list, padded to listRows.
func (m *Model) rows(l layout) []string {
	vis := m.visible()
	sel := m.selected()
	pair := m.partner(sel)
	out := make([]string, 0, l.listRows)
	for i := m.top; i < len(vis) && len(out) < l.listRows; i++ {
		e := vis[i]
		line := pad(m.row(e, e == sel, pair != nil && e == pair, l.width), l.width)
		switch {
		case e == sel && m.focus == listPane:
			line = styleSelected.Render(line)
		case e == sel:
			line = styleSelected.Faint(true).Render(line)
		case pair != nil && e == pair:
			line = stylePartner.Render(line)
		case e.held:
			line = styleHeld.Render(line)
		}
		out = append(out, line)
	}
	if len(vis) == 0 {
		note := "  no messages yet"
		if len(m.entries) > 0 {
			note = "  no message matches the filters (esc clears them)"
		}
		out = append(out, note)
	}
	for len(out) < l.listRows {
		out = append(out, "")
	}
	return out
}

var kindShort = map[string]string{
	"request": "req", "response": "resp", "notification": "note",
	"error": "err", "batch": "batch", "invalid": "inval",
}

var actionShort = map[string]string{
	"forward": "fwd", "modify": "mod", "drop": "drop", "held": "HELD", "released": "rel",
	"blocked": "blkd",
}

// row is one message as a line of plain text.
func (m *Model) row(e *entry, selected, partner bool, w int) string {
	mark := ' '
	switch {
	case selected:
		mark = '>'
	case partner:
		mark = '='
	}
	held := ' '
	if e.held {
		held = '!'
	}
	dir := "??"
	switch e.m.Dir {
	case "client->server":
		dir = "->"
	case "server->client":
		dir = "<-"
	}
	kind := kindShort[e.m.Kind]
	if kind == "" {
		kind = ansi.Truncate(oneLine(e.m.Kind), colKind, "")
	}
	method, tool := e.m.Method, e.m.Tool
	if req := m.request(e); req != nil {
		method, tool = req.m.Method, req.m.Tool
	}
	name := oneLine(method)
	if tool != "" {
		name += " " + oneLine(tool)
	}
	mw := methodWidth(w)
	return fmt.Sprintf("%c%c%*d %-*s %-*s %s %s %*s %-*s %s", mark, held, colSeq, e.m.Seq, colDir, dir, colKind, kind,
		pad(name, mw), pad(oneLine(e.m.ID), colID), colSize, fmtSize(len(e.m.Raw)), colAct, m.action(e), m.answer(e))
}

// action is the short form of what happened to a message.
func (m *Model) action(e *entry) string {
	switch {
	case e.held && e.asked != "":
		return actionShort[e.asked] + "?"
	case e.held:
		return "HELD"
	case e.outcome != "":
		return actionShort[e.outcome]
	}
	if a, ok := actionShort[e.m.Action]; ok {
		return a
	}
	return ansi.Truncate(oneLine(e.m.Action), colAct, "")
}

// answer is the last column: for a request its answer's status and latency,
// for a response or error the request it answers.
func (m *Model) answer(e *entry) string {
	switch e.m.Kind {
	case "request":
		r := m.bySeq[e.resp]
		if r == nil {
			if e.outcome == "drop" || (!e.held && e.m.Action == "drop") {
				return "dropped"
			}
			return "..."
		}
		lat := fmtDur(r.m.Time.Sub(e.m.Time))
		if r.m.Kind == "error" {
			return "err " + r.errCode + " " + lat
		}
		return "ok " + lat
	case "response", "error":
		if req := m.request(e); req != nil {
			return fmt.Sprintf("#%d %s", req.m.Seq, fmtDur(e.m.Time.Sub(req.m.Time)))
		}
		if e.errCode != "" {
			return e.errCode
		}
	}
	return ""
}

func (m *Model) separator() string {
	e := m.selected()
	focus := "list"
	if m.focus == detailPane {
		focus = "detail"
	}
	if e == nil {
		return fmt.Sprintf("-- detail -- (focus: %s, tab switches)", focus)
	}
	s := fmt.Sprintf("-- #%d %s %s", e.m.Seq, oneLine(e.m.Dir), oneLine(e.m.Kind))
	if e.held {
		s += " HELD (f forward, m edit, d drop)"
	}
	pct := int(m.detail.ScrollPercent() * 100)
	return s + fmt.Sprintf(" -- %d%% -- focus: %s ", pct, focus)
}

// detailText is the detail pane's content for e, wrapped to w columns.
func (m *Model) detailText(e *entry, w int) string {
	if e == nil {
		return "Nothing selected. Messages appear here as the agent and the server talk."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s %s  %s  %s bytes\n", e.m.Seq, e.m.Dir, e.m.Kind, e.m.Time.Format("15:04:05.000"), fmtSize(len(e.m.Raw)))
	if e.m.ID != "" {
		fmt.Fprintf(&b, "id %s  ", e.m.ID)
	}
	if e.m.Method != "" {
		fmt.Fprintf(&b, "method %s  ", e.m.Method)
	}
	if e.m.Tool != "" {
		fmt.Fprintf(&b, "tool %s  ", e.m.Tool)
	}
	fmt.Fprintf(&b, "action %s", m.action(e))
	if e.m.Rule != "" {
		fmt.Fprintf(&b, "  rule %s", e.m.Rule)
	}
	b.WriteByte('\n')
	if p := m.partner(e); p != nil {
		if p.m.Seq == e.resp {
			fmt.Fprintf(&b, "answered by #%d (%s) after %s; p jumps to it\n", p.m.Seq, p.m.Kind, fmtDur(p.m.Time.Sub(e.m.Time)))
		} else {
			fmt.Fprintf(&b, "answers #%d (%s %s) after %s; p jumps to it\n", p.m.Seq, p.m.Method, p.m.Tool, fmtDur(e.m.Time.Sub(p.m.Time)))
		}
	} else if e.m.Kind == "request" {
		b.WriteString("no answer yet\n")
	}
	if len(e.m.Original) > 0 {
		b.WriteString("\nsent (modified):\n")
		writeJSON(&b, e.m.Raw)
		b.WriteString("\noriginal, as received:\n")
		writeJSON(&b, e.m.Original)
	} else {
		b.WriteByte('\n')
		writeJSON(&b, e.m.Raw)
	}
	return ansi.Hardwrap(sanitize(b.String()), w, true)
}

func writeJSON(b *strings.Builder, raw []byte) {
	if s, ok := indent(raw); ok {
		b.WriteString(s)
	} else {
		b.WriteString("(not valid JSON; the bytes as received:)\n")
		b.Write(raw)
	}
	b.WriteByte('\n')
}

func (m *Model) statusLine(w int) string {
	if m.prompting {
		return pad("filter method/tool: /"+oneLine(m.input)+"_   (enter keeps, esc cancels)", w)
	}
	if m.status != "" {
		s := pad(oneLine(m.status), w)
		if m.statusErr {
			return styleError.Render(s)
		}
		return s
	}
	vis := len(m.visible())
	dir := map[string]string{"": "all", "client->server": "->", "server->client": "<-"}[dirFilters[m.dirFilter]]
	kind := kindFilters[m.kindFilter]
	if kind == "" {
		kind = "all"
	}
	text := "-"
	if m.text != "" {
		text = `"` + oneLine(m.text) + `"`
	}
	return pad(fmt.Sprintf("filter: dir %s (>)  kind %s (t)  text %s (/)  | %d of %d shown", dir, kind, text, vis, len(m.entries)), w)
}

const keyLine = "q quit ? help i intercept f fwd d drop m edit s save r replay p pair n held"

var helpText = []string{
	"Keys",
	"",
	"  up/down j/k     move in the list, or scroll the detail pane",
	"  pgup/pgdn g/G   page, first, last (the last row follows new messages)",
	"  tab, enter      switch between the list and the detail pane",
	"  p               jump between a request and its response",
	"  >  t  /         filter by direction, by kind, by text in method/tool",
	"  esc             clear the filters (held messages are always listed)",
	"  i               switch intercept on or off (off releases held ones)",
	"  n               select the next held message",
	"  f  d  m         forward, drop, or edit ($EDITOR) and forward the",
	"                  selected held message",
	"  r               replay the selected client request to the server",
	"  s               save the session to a JSON file here",
	"  q               quit",
	"",
	"Rows: > selected, = its pair, ! held; -> client to server, <- server to",
	"client; answer: a request's status and latency, a response's request.",
	"",
	"Any key closes this help.",
}

func (m *Model) helpLines(w, h int) []string {
	out := make([]string, 0, h)
	for _, s := range helpText {
		if len(out) == h {
			break
		}
		out = append(out, pad(s, w))
	}
	for len(out) < h {
		out = append(out, "")
	}
	return out
}
