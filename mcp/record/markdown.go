package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/mcp/jsonrpc"
	"github.com/contextd/contextd/mcp/relay"
)

// WriteMarkdown writes a transcript for people: each request with its
// response right under it, notifications and unpaired messages in their
// place, JSON indented, and what the engine did said in words.
func WriteMarkdown(w io.Writer, r *Record) error {
	bw := bufio.NewWriter(w)
	s := r.Session
	fmt.Fprintf(bw, "# MCP session %s\n\n", s.ID)
	fmt.Fprintf(bw, "- Server: %s\n", inlineCode(ServerLabel(s.Server)))
	fmt.Fprintf(bw, "- Started: %s\n", s.Started.UTC().Format(time.RFC3339))
	if !s.Ended.IsZero() {
		fmt.Fprintf(bw, "- Ended: %s (%s)\n", s.Ended.UTC().Format(time.RFC3339), s.Ended.Sub(s.Started).Round(time.Millisecond))
	}
	if s.Failure != "" {
		fmt.Fprintf(bw, "- Failed: %s\n", s.Failure)
	}
	fmt.Fprintf(bw, "- Messages: %d\n", len(r.Entries))
	for _, x := range exchanges(r) {
		bw.WriteString("\n")
		switch {
		case x.orphan != nil:
			e := x.orphan
			fmt.Fprintf(bw, "## #%d %s %s without a recorded request\n\n", e.Seq, arrow(e.Dir), e.Kind)
			writeMessage(bw, e)
		default:
			q := x.req
			title := q.Method
			if title == "" {
				title = q.Kind.String()
			}
			if q.Tool != "" {
				title += " " + inlineCode(q.Tool)
			}
			fmt.Fprintf(bw, "## #%d %s %s\n\n", q.Seq, arrow(q.Dir), title)
			fmt.Fprintf(bw, "%s %s, %s", q.Kind, idText(q.ID), q.Time.UTC().Format("15:04:05.000"))
			bw.WriteString("\n\n")
			writeMessage(bw, q)
			switch {
			case x.resp != nil:
				a := x.resp
				fmt.Fprintf(bw, "**%s %s** #%d, after %s\n\n", arrow(a.Dir), a.Kind, a.Seq,
					a.Time.Sub(q.Time).Round(time.Microsecond))
				writeMessage(bw, a)
			case x.reply != nil:
				bw.WriteString("**Answered by contextd** instead of the server:\n\n")
				writeBlock(bw, x.reply)
			case q.Kind == jsonrpc.KindRequest:
				bw.WriteString("_No response recorded._\n\n")
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("record: write Markdown: %w: %w", err, catalog.ErrIO)
	}
	return nil
}

func arrow(d jsonrpc.Direction) string {
	if d == jsonrpc.ServerToClient {
		return "←"
	}
	return "→"
}

func idText(id json.RawMessage) string {
	if len(id) == 0 {
		return "no id"
	}
	return "id " + inlineCode(string(id))
}

// writeMessage writes one entry's message and what happened to it.
func writeMessage(w *bufio.Writer, e *Entry) {
	switch e.Action {
	case relay.Modify:
		fmt.Fprintf(w, "Modified by %s; as passed on:\n\n", ruleText(e.Rule))
	case relay.Drop:
		if e.Error != "" {
			fmt.Fprintf(w, "**Blocked**: %s\n\n", strings.ReplaceAll(e.Error, "\n", " "))
		} else {
			fmt.Fprintf(w, "**Dropped** by %s.\n\n", ruleText(e.Rule))
		}
	}
	writeBlock(w, e.Raw)
	if e.Original != nil {
		w.WriteString("As it came:\n\n")
		writeBlock(w, e.Original)
	}
}

func ruleText(rule string) string {
	if rule == "" {
		return "the engine"
	}
	return "rule " + inlineCode(rule)
}

// writeBlock writes a message as a fenced block: indented JSON when it is
// JSON, its text otherwise, inside a fence longer than any run of backticks
// it holds.
func writeBlock(w *bufio.Writer, raw []byte) {
	lang := "json"
	var buf bytes.Buffer
	if json.Valid(raw) && json.Indent(&buf, raw, "", "  ") == nil {
		raw = buf.Bytes()
	} else {
		lang = ""
	}
	fence := strings.Repeat("`", max(3, longestRun(raw, '`')+1))
	w.WriteString(fence + lang + "\n")
	w.Write(bytes.ToValidUTF8(raw, []byte("\uFFFD")))
	w.WriteString("\n" + fence + "\n\n")
}

func longestRun(b []byte, c byte) int {
	best, n := 0, 0
	for _, x := range b {
		if x == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

// inlineCode quotes s as inline code, whatever backticks it holds.
func inlineCode(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	ticks := strings.Repeat("`", longestRun([]byte(s), '`')+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return ticks + pad + s + pad + ticks
}
