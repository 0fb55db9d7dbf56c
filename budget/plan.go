package budget

import (
	"bytes"
	"fmt"
	"io"
)

// HeadShare is the percentage of a cut response's budget (after the marker)
// offered to the head. The start of an output usually says what ran and shows
// the first error; its end holds the final status and summary. The head gets a
// bit more, and the tail gets whatever the head did not use, so neither end is
// starved.
const HeadShare = 60

// WindowBytesPerToken sizes the windows PlanEnds needs: four times the 3.7 bytes
// per token measured on code and logs. Text sparser than that (long runs of
// spaces or '=') still fits; the response just uses less than its budget.
const WindowBytesPerToken = 16

// markerSlack covers the marker's numbers growing a digit between the estimate
// and the final gap; a miss costs one more try, not a wrong answer.
const markerSlack = 8

// Gap is the part of an output that a Cut leaves out.
type Gap struct {
	Start, End int64 // the left-out bytes are output[Start:End]
	Lines      int   // lines in them, a line cut by Start or End counting as one
}

// Bytes returns the number of bytes left out.
func (g Gap) Bytes() int64 { return g.End - g.Start }

// MarkFunc returns the marker line for a gap, normally by calling Marker with
// the continuation reference (which may depend on g.Start) and the tool name.
type MarkFunc func(g Gap) string

// Cut is a first response: the whole output if it fits, otherwise its head, a
// marker line, and its tail.
type Cut struct {
	// Data is the response text. When nothing is left out it is the output
	// itself (not a copy).
	Data []byte
	// Tokens is the exact token count of Data, at most the budget (unless the
	// marker line alone is longer than the budget).
	Tokens int
	// Truncated is set when something was left out; Gap then says what.
	Truncated bool
	Gap       Gap
	// HeadLen and TailLen are how many bytes of the output's start and end
	// Data holds (in the coordinates of the head and tail PlanEnds was given).
	HeadLen, TailLen int
}

// Plan cuts text to budget for a first response. If text fits, Data is text.
// Otherwise the head gets up to HeadShare percent of what the marker leaves,
// the tail the rest. Budgets below MinBudget are raised to it.
//
// Only the ends of text are tokenized and the lines left out are counted with
// bytes.Count, so a 10 MB text costs little more than a 10 kB one.
func (c *Counter) Plan(text []byte, budget int, mark MarkFunc) Cut {
	return c.plan(text, text, int64(len(text)), -1, budget, mark)
}

// PlanEnds is Plan for an output too large to hold: head is its first bytes and
// tail its last (Window(budget) of each is enough), size its length, and
// newlines the number of '\n' in all of it, from which Gap.Lines is derived. If
// head holds the whole output (len(head) == size) PlanEnds is Plan; otherwise
// the output is taken not to fit, and is cut.
//
// The windows may be scrubbed copies of the output's ends: Data is assembled
// from them, and HeadLen and TailLen count their bytes, which the caller maps
// back to offsets in the stored output if scrubbing changed lengths.
func (c *Counter) PlanEnds(head, tail []byte, size, newlines int64, budget int, mark MarkFunc) Cut {
	return c.plan(head, tail, size, newlines, budget, mark)
}

// Window returns how many bytes of each end of an output PlanEnds needs for
// budget.
func Window(budget int) int {
	return max(budget, MinBudget) * WindowBytesPerToken
}

// ReadEnds reads the first and last window bytes of the size bytes in r, for
// PlanEnds. An output shorter than two windows is read whole, and returned as
// both head and tail, so that PlanEnds can tell whether it fits.
func ReadEnds(r io.ReaderAt, size int64, window int) (head, tail []byte, err error) {
	w := int64(window)
	if size <= 2*w {
		head = make([]byte, size)
		if _, err := r.ReadAt(head, 0); err != nil && !(err == io.EOF && size == 0) {
			return nil, nil, fmt.Errorf("read output [0, %d): %w", size, err)
		}
		return head, head, nil
	}
	head = make([]byte, w)
	if _, err := r.ReadAt(head, 0); err != nil {
		return nil, nil, fmt.Errorf("read output head [0, %d): %w", w, err)
	}
	tail = make([]byte, w)
	if _, err := r.ReadAt(tail, size-w); err != nil {
		return nil, nil, fmt.Errorf("read output tail [%d, %d): %w", size-w, size, err)
	}
	return head, tail, nil
}

// plan implements Plan (newlines < 0: head is the whole text, count lines in
// it) and PlanEnds.
func (c *Counter) plan(head, tail []byte, size, newlines int64, budget int, mark MarkFunc) Cut {
	budget = max(budget, MinBudget)
	whole := int64(len(head)) >= size
	if whole {
		head = head[:size]
		tail = head
		// Head takes at most MaxBytesPerToken bytes a token: a longer text
		// cannot fit, and need not be tried.
		if len(head)/MaxBytesPerToken <= budget {
			if n, t := c.Head(head, budget); n == len(head) {
				return Cut{Data: head, Tokens: t, HeadLen: n}
			}
		}
	}
	e := ends{head: head, tail: tail, size: size, newlines: newlines, whole: whole}
	if !whole {
		e.trim()
	}

	lines := newlines
	if whole {
		lines = int64(bytes.Count(head, []byte{'\n'}))
	}
	reserve := c.Count([]byte(mark(Gap{Start: 0, End: size, Lines: int(lines) + 1}))) + 1 + markerSlack
	avail := max(budget-reserve, 0)
	for range 4 {
		cut := c.try(e, avail, mark)
		if cut.Tokens <= budget {
			return cut
		}
		avail = max(avail-(cut.Tokens-budget), 0)
	}
	// Only reached when the marker alone is about as long as the budget.
	g := Gap{Start: 0, End: size, Lines: e.lines(0, 0)}
	data := []byte(endLine(mark(g)))
	return Cut{Data: data, Tokens: c.Count(data), Truncated: true, Gap: g}
}

// try assembles one candidate cut with avail tokens for head and tail.
func (c *Counter) try(e ends, avail int, mark MarkFunc) Cut {
	hl, ht := c.Head(e.head, avail*HeadShare/100)
	if e.whole && hl == len(e.head) {
		return Cut{Data: e.head, Tokens: ht, HeadLen: hl} // fits after all
	}
	region := e.tailFrom(hl)
	ts, _ := c.Tail(region, avail-ht)
	tl := len(region) - ts
	if int64(hl)+int64(tl) >= e.size && ts < len(region) {
		// Head and tail met: the seam cost tokens the two counts did not see.
		// Leave out at least the tail's first line, so there is a gap to mark.
		tl = len(region) - newSide(region, false).next(ts)
	}
	g := Gap{Start: int64(hl), End: e.size - int64(tl), Lines: e.lines(hl, tl)}
	m := endLine(mark(g))

	data := make([]byte, 0, hl+1+len(m)+tl)
	data = append(data, e.head[:hl]...)
	if hl > 0 && e.head[hl-1] != '\n' {
		data = append(data, '\n') // the head was cut inside its first line
	}
	data = append(data, m...)
	data = append(data, region[len(region)-tl:]...)
	return Cut{Data: data, Tokens: c.Count(data), Truncated: true, Gap: g, HeadLen: hl, TailLen: tl}
}

// ends are the two windows of an output being planned.
type ends struct {
	head, tail []byte
	size       int64
	newlines   int64 // in the whole output; unused when whole
	whole      bool  // head (== tail) is the whole output
	tailAtLine bool  // trim cut the tail window just after a '\n'
}

// trim drops the partial lines at the windows' inner edges, so that Head and
// Tail, which take a window's edge for a line boundary, see only whole lines.
// A window without a line break is one line longer than the window, cut inside
// anyway, and is kept.
func (e *ends) trim() {
	if i := bytes.LastIndexByte(e.head, '\n'); i >= 0 {
		e.head = e.head[:i+1]
	}
	if i := bytes.IndexByte(e.tail, '\n'); i >= 0 && i < len(e.tail)-1 {
		e.tail = e.tail[i+1:]
		e.tailAtLine = true
	}
}

// tailFrom returns the part of the tail window after the first hl bytes of the
// output. It may start inside a line: Tail then takes lines after it, or cuts
// inside the last line, which is where a cut head and tail of one long line
// meet.
func (e *ends) tailFrom(hl int) []byte {
	start := e.size - int64(len(e.tail)) // offset of e.tail in the output
	if start >= int64(hl) {
		return e.tail
	}
	return e.tail[int64(hl)-start:]
}

// lines counts the lines between the first hl and the last tl bytes.
func (e *ends) lines(hl, tl int) int {
	end := e.size - int64(tl)
	if end <= int64(hl) {
		return 0
	}
	var n int64
	if e.whole {
		gap := e.head[hl:end]
		n = int64(bytes.Count(gap, []byte{'\n'}))
		if gap[len(gap)-1] != '\n' {
			n++
		}
		return int(n)
	}
	n = e.newlines - int64(bytes.Count(e.head[:hl], []byte{'\n'})) -
		int64(bytes.Count(e.tail[len(e.tail)-tl:], []byte{'\n'}))
	// The gap's last byte is in the tail window unless the tail used all of
	// it; then it is the '\n' trim cut at, or unknown: the line taken as cut.
	if i := len(e.tail) - tl - 1; i >= 0 && e.tail[i] != '\n' || i < 0 && !e.tailAtLine {
		n++
	}
	return int(max(n, 0))
}

// endLine makes sure a marker ends its line.
func endLine(m string) string {
	if m == "" || m[len(m)-1] != '\n' {
		return m + "\n"
	}
	return m
}
