// Package respond is the path a tool's output takes to the caller: the
// daemon's own scrub (the second layer, on what leaves the daemon and nothing
// else), the token budget, and the stored output continuation pages are cut
// from.
//
// A tool's output arrives already scrubbed by the tool inside its sandbox
// (the first layer), with the session's placeholders in it. A Pipe streams the
// start of it to the caller as it comes (up to budget.HeadShare percent of the
// budget, so a long command shows progress), keeps all of it (in memory up to
// memLimit, then in the page store), and at Close either sends the rest, if it
// fits, or a marker line and the tail. Pages (Page) are cut from the stored
// output on demand, from its first byte, each within the budget; their
// concatenation is the whole output, scrubbed.
package respond

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/daemon/pages"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/scrub"
)

// memLimit is how much output a Pipe holds in memory before it moves it to the
// page store; most outputs are far smaller and never touch the disk.
const memLimit = 1 << 20

// margin is how far the second layer looks beyond the ends of what it returns,
// so that a secret that crosses a cut is seen whole (a PEM RSA-4096 key is
// about 3.3 kB).
const margin = 16 << 10

// Layer is the daemon's scrub: every byte that leaves goes through it.
type Layer struct {
	Scrubber *scrub.Scrubber
	Vault    *scrub.Vault
	// Source is where the output came from, for the vault (a file path, or ""
	// for command output): safe_write puts back only secrets read from the
	// same file.
	Source string
	// Catches counts what this layer found, by rule; the first layer should
	// have left nothing for it.
	Catches map[string]int
}

func (l *Layer) count(rule string) {
	if l.Catches == nil {
		l.Catches = map[string]int{}
	}
	l.Catches[rule]++
}

// Scrub returns b with every finding replaced by its session placeholder.
func (l *Layer) Scrub(b []byte) []byte { return l.replace(b, l.Scrubber.Find(b)) }

// region scrubs b[a:e], looking margin bytes beyond both ends (b is all
// that is available around it). A finding that crosses a or e moves it
// outwards, so that a secret is never cut in two; the ends used are returned.
func (l *Layer) region(b []byte, a, e int) (out []byte, na, ne int) {
	fs, na, ne := l.Scrubber.FindRange(b, a, e, margin)
	for i := range fs {
		fs[i].Start -= na
		fs[i].End -= na
	}
	return l.replace(b[na:ne], fs), na, ne
}

// replace puts the session's placeholders in place of fs in b, counting them
// as this layer's catches.
func (l *Layer) replace(b []byte, fs []scrub.Finding) []byte {
	if len(fs) == 0 {
		return b
	}
	for _, f := range fs {
		l.count(f.Rule)
	}
	return scrub.Replace(b, fs, func(f scrub.Finding) string {
		return l.Vault.Placeholder(f.Rule, f.Secret, l.Source)
	})
}

// buffers are a Pipe's in-memory copy of the output (mem, up to memLimit)
// and of its end (tail). They are recycled, not made per call: a fresh
// megabyte costs a page fault per 4 KiB page on first touch (tens of
// microseconds each on a virtual machine), the runtime hands freed memory back
// to the kernel, and growing the copy of a large output slice by slice was
// most of what the daemon spent on it. At most maxFree sets are kept, so the
// daemon holds a few MiB more at most, and only after large outputs.
type buffers struct{ mem, tail []byte }

const maxFree = 4

var free struct {
	sync.Mutex
	list []*buffers
}

func getBuffers() *buffers {
	free.Lock()
	defer free.Unlock()
	if n := len(free.list); n > 0 {
		b := free.list[n-1]
		free.list = free.list[:n-1]
		return b
	}
	return &buffers{mem: make([]byte, 0, memLimit)}
}

func putBuffers(b *buffers) {
	free.Lock()
	defer free.Unlock()
	if len(free.list) < maxFree {
		free.list = append(free.list, b)
	}
}

// Options configure a Pipe.
type Options struct {
	Layer   *Layer
	Counter *budget.Counter
	Budget  int // tokens
	// Store keeps outputs that do not fit, for pages; Session and Tool own
	// them.
	Store         *pages.Store
	Session, Tool string
	// Send delivers text to the caller, in order.
	Send func([]byte) error
	// Salience, when set, chooses what the first page of an output over
	// budget shows: head, the salient blocks (failures, wherever they are),
	// tail, with passing tests' progress folded (package salience). The
	// page is decided when the output ends, so nothing is streamed live.
	// Nil: head and tail, the head streamed as it comes.
	Salience *salience.Set
}

// Pipe takes a tool's output (io.Writer) and answers within the budget.
type Pipe struct {
	o Options

	bufs  *buffers     // where mem and tail live, from the free list
	mem   []byte       // the output while it is small
	entry *pages.Entry // the output once it is not
	size  int64
	lines int64 // newlines seen

	// Live streaming of the head: the stream scrubber emits complete lines,
	// sent while they fit in liveBudget.
	live       bool
	stream     *scrub.Stream
	liveRaw    int64 // bytes of the output the caller has (live)
	liveLines  int64 // newlines in them
	liveTokens int
	liveBudget int
	sent       bytes.Buffer // everything sent, to count tokens_used exactly
	tail       []byte       // the last bytes of the output (after the last hole), for the tail
	holes      int          // holes in the output
	tailKeep   int
	err        error

	// With Options.Salience: the scanner sees the output as it comes, and
	// head keeps its first bytes (up to the first hole) for the page.
	scan      *salience.Scanner
	head      []byte
	headKeep  int
	headDone  bool     // a hole came: head stops there
	outline   []string // definitions in the holes of a source file
	lastHole  [4]int64 // the last hole's offset, length, first line - 1, lines
	firstHole int64    // the first hole's offset
}

// New returns a Pipe.
func New(o Options) *Pipe {
	b := max(o.Budget, budget.MinBudget)
	o.Budget = b
	// The live head takes its share, but never the room the marker line
	// will need should the output not fit: at small budgets the marker is
	// a large part of the response.
	live := max(min(b*budget.HeadShare/100, b-markerReserve(o.Counter, o.Tool)), 0)
	p := &Pipe{o: o, live: true, liveBudget: live, tailKeep: budget.Window(b) + margin}
	p.stream = scrub.NewStream(o.Layer.Scrubber, p.emitLive)
	if o.Salience != nil {
		// Only the first lines stream live (a long command shows it
		// started); the rest of the first page is decided at the end.
		p.liveBudget = min(p.liveBudget, b*liveShare/100)
		p.scan = o.Salience.NewScanner()
		// safe_read shows a file's lines numbered.
		p.scan.Numbered = o.Tool == "safe_read"
		p.headKeep = budget.Window(b) + margin
	}
	return p
}

// liveShare is the percentage of the budget streamed live when the
// salience pass decides the rest of the first page at the end.
const liveShare = 10

// refBytes is the length of a first page's reference ("c" and 32 hex
// digits, pages.FormatRef), which costs at most a token a byte.
const refBytes = 33

// markerReserve bounds the tokens of any marker line of tool: its numbers at
// their widest, its reference at a token a byte, and two for the seams.
func markerReserve(c *budget.Counter, tool string) int {
	return c.Count([]byte(budget.Marker(999_999_999, 999_999_999_999, "", tool))) + refBytes + 2
}

// emitLive receives complete, layer-2-scrubbed lines from the stream.
func (p *Pipe) emitLive(text []byte, fs []scrub.Finding) error {
	if !p.live {
		return nil
	}
	out := p.liveScrub(text, fs)
	n, over := p.o.Counter.CountUpTo(out, p.liveBudget-p.liveTokens)
	if over {
		// The piece does not fit: send the whole lines of it that do, and
		// stop streaming (the rest is decided at Close).
		p.live = false
		text, out, n = p.liveHead(text, fs, p.liveBudget-p.liveTokens)
		if len(text) == 0 {
			return nil
		}
	}
	if err := p.o.Send(out); err != nil {
		return err
	}
	for _, f := range fs {
		if f.End <= len(text) {
			p.o.Layer.count(f.Rule)
		}
	}
	p.sent.Write(out)
	p.liveTokens += n
	p.liveRaw += int64(len(text))
	p.liveLines += int64(bytes.Count(text, []byte{'\n'}))
	return nil
}

// liveScrub replaces the findings of text (a piece of the stream) with their
// placeholders.
func (p *Pipe) liveScrub(text []byte, fs []scrub.Finding) []byte {
	if len(fs) == 0 {
		return text
	}
	return scrub.Replace(text, fs, func(f scrub.Finding) string {
		return p.o.Layer.Vault.Placeholder(f.Rule, f.Secret, p.o.Layer.Source)
	})
}

// liveHead returns the longest prefix of text made of whole lines, cut
// before any secret it would split, whose scrubbed form fits room tokens:
// the prefix, its scrubbed form and their tokens.
func (p *Pipe) liveHead(text []byte, fs []scrub.Finding, room int) ([]byte, []byte, int) {
	want := room
	for range 4 {
		if want <= 0 {
			break
		}
		n, _ := p.o.Counter.Head(text, want)
		if n < len(text) {
			// Whole lines only: Head cuts inside a line too long for the room.
			n = bytes.LastIndexByte(text[:n], '\n') + 1
		}
		var keep []scrub.Finding
		for _, f := range fs {
			if f.Start < n && f.End > n {
				n = bytes.LastIndexByte(text[:f.Start], '\n') + 1
			}
		}
		for _, f := range fs {
			if f.End <= n {
				keep = append(keep, f)
			}
		}
		if n == 0 {
			break
		}
		out := p.liveScrub(text[:n], keep)
		used := p.o.Counter.Count(out)
		if used <= room {
			return text[:n], out, used
		}
		// Placeholders are longer than what they replace: ask for less.
		want -= used - room + 8
	}
	return nil, nil, 0
}

// Write implements io.Writer.
func (p *Pipe) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	p.size += int64(len(b))
	p.lines += int64(bytes.Count(b, []byte{'\n'}))
	if p.scan != nil {
		p.scan.Write(b)
		if !p.headDone && len(p.head) < p.headKeep {
			p.head = append(p.head, b[:min(len(b), p.headKeep-len(p.head))]...)
		}
	}
	if err := p.keep(b); err != nil {
		p.err = err
		return 0, err
	}
	if p.live {
		if _, err := p.stream.Write(b); err != nil {
			p.err = err
			return 0, err
		}
	}
	return len(b), nil
}

// keep stores b: in memory, or in the page store once the output is large.
func (p *Pipe) keep(b []byte) error {
	if p.entry == nil && len(p.mem)+len(b) <= memLimit {
		if p.bufs == nil {
			p.bufs = getBuffers()
			p.mem = p.bufs.mem[:0]
		}
		p.mem = append(p.mem, b...)
		return nil
	}
	if err := p.toStore(); err != nil {
		return err
	}
	if _, err := p.entry.Write(b); err != nil {
		return err
	}
	p.keepTail(b)
	return nil
}

// toStore moves the output from memory to the page store, if not done yet.
func (p *Pipe) toStore() error {
	if p.entry != nil {
		return nil
	}
	e, err := p.o.Store.Create(p.o.Session, p.o.Tool)
	if err != nil {
		return err
	}
	p.entry = e
	if _, err := e.Write(p.mem); err != nil {
		return err
	}
	// Room for the tail kept plus one piece smaller than it: the tail
	// never reallocates (a large output arrives in 256 KiB pieces, and
	// growing a slice for each was most of the garbage of a call).
	if p.bufs == nil {
		p.bufs = getBuffers()
	}
	if cap(p.bufs.tail) < 3*p.tailKeep {
		p.bufs.tail = make([]byte, 0, 3*p.tailKeep)
	}
	p.tail = p.bufs.tail[:0]
	p.keepTail(p.mem)
	p.mem = nil
	return nil
}

// Hole stands for n bytes of output (with lines newlines) that the tool did
// not send: the middle of a long read, which a first response never shows.
// The page store keeps a hole there, and source, for a page that needs the
// bytes to have them made again (Page's fill). The live stream ends at a hole,
// and the kept tail starts again after it.
func (p *Pipe) Hole(n, lines int64, source []byte) error {
	if p.err != nil {
		return p.err
	}
	if err := p.toStore(); err != nil {
		p.err = err
		return err
	}
	if err := p.entry.Hole(n, source); err != nil {
		p.err = err
		return err
	}
	p.lastHole = [4]int64{p.size, n, p.lines, lines}
	if p.holes == 0 {
		p.firstHole = p.size
	}
	p.size += n
	p.lines += lines
	p.live = false
	p.holes++
	p.tail = p.tail[:0]
	if p.scan != nil {
		p.scan.Skip(n, lines)
		p.headDone = true
	}
	return nil
}

// HoleExtra is what the tool found in the hole just announced: salient
// blocks (lines numbered as the output's), total the failures there in
// all, and for a source file the outline of its definitions there. Ignored
// without Options.Salience.
func (p *Pipe) HoleExtra(blocks []salience.Block, total int, outline []string) {
	if p.scan == nil {
		return
	}
	// Where each block lies in the hole, in bytes, is only known by its
	// lines: an estimate in proportion, strictly inside the hole, for the
	// page's spans (the block's text is exact).
	at, n, line0, lines := p.lastHole[0], p.lastHole[1], p.lastHole[2], max(p.lastHole[3], 1)
	for i := range blocks {
		b := &blocks[i]
		b.Rule = insertedRule
		rel := min(max(int64(b.FirstLine)-line0-1, 0), lines)
		b.Start = at + 1 + rel*(n-2)/lines
		b.End = min(b.Start+int64(len(b.Text)), at+n-1)
		b.MatchStart = b.Start
	}
	p.scan.Insert(blocks, total)
	p.outline = append(p.outline, outline...)
}

// insertedRule marks the blocks of a hole: their bytes are not in the
// stored output (they came in the tool's gap frame, scrubbed by it).
const insertedRule = -1

// keepTail keeps the last tailKeep bytes (at least) of the output, b being
// its latest piece.
func (p *Pipe) keepTail(b []byte) {
	if len(b) >= p.tailKeep {
		p.tail = append(p.tail[:0], b[len(b)-p.tailKeep:]...)
		return
	}
	if len(p.tail)+len(b) > cap(p.tail) {
		p.tail = append(p.tail[:0], p.tail[len(p.tail)-(p.tailKeep-len(b)):]...)
	}
	p.tail = append(p.tail, b...)
}

// Summary is what a Pipe reports at Close, for the result and the audit.
type Summary struct {
	Bytes      int64
	TokensUsed int
	Truncated  bool
	Continue   string // the first page's reference, when Truncated
}

// Close sends what is left within the budget and reports. The tool must be
// done writing.
func (p *Pipe) Close() (Summary, error) {
	defer p.release()
	if p.err != nil {
		p.discard()
		return Summary{}, p.err
	}
	// The last lines the stream held back (an unfinished line, an open key
	// block) are part of the rest below.
	p.live = false
	restLen := p.size - p.liveRaw
	avail := p.o.Budget - p.o.Counter.Count(p.sent.Bytes())
	sum := Summary{Bytes: p.size}
	// The rest fits if it is small enough to count and counts small enough.
	// An output with a hole was cut by the tool because it is long: it
	// does not.
	if restLen <= int64(budget.Window(p.o.Budget)) && p.holes == 0 {
		rest := p.restBytes(restLen)
		out := p.o.Layer.Scrub(rest)
		if p.o.Counter.Count(out) <= avail {
			if err := p.send(out); err != nil {
				return sum, err
			}
			p.discard()
			sum.TokensUsed = p.o.Counter.Count(p.sent.Bytes())
			return sum, nil
		}
	}
	// It does not: a marker and as much of the tail as fits.
	ref, err := p.commit()
	if err != nil {
		return sum, err
	}
	if p.scan != nil {
		done, err := p.closeSalient(&sum, ref, avail)
		if done || err != nil {
			return sum, err
		}
		// Nothing salient, nothing folded: head and tail as without the
		// pass, the head grown to its usual share first.
		p.growHead()
		avail = p.o.Budget - p.o.Counter.Count(p.sent.Bytes())
	}
	win := p.tailWindow()
	start := p.size - int64(len(win))
	// The tail comes from what was not sent live. Cut it on the raw text
	// (whole lines), then scrub it; placeholders may be longer than what
	// they replace, so cut once more if the scrubbed tail grew past the room.
	skip := int(max(0, p.liveRaw-start))
	first := ref // Commit's reference is to the first byte
	probe := []byte(budget.Marker(int(p.lines), p.size, first, p.o.Tool))
	room := avail - p.o.Counter.Count(probe) - 2
	var tail []byte
	tailRaw := p.size
	if room > 0 {
		at, _ := p.o.Counter.Tail(win[skip:], room)
		t, na, _ := p.o.Layer.region(win, skip+at, len(win))
		if p.o.Counter.Count(t) > room {
			at2, _ := p.o.Counter.Tail(t, room)
			t = t[at2:]
		}
		tail, tailRaw = t, start+int64(na)
	}
	marker := []byte(budget.Marker(int(p.gapLines(tailRaw)), tailRaw-p.liveRaw, first, p.o.Tool))
	if len(p.sent.Bytes()) > 0 && p.sent.Bytes()[p.sent.Len()-1] != '\n' {
		marker = append([]byte{'\n'}, marker...)
	}
	if err := p.send(marker); err != nil {
		return sum, err
	}
	if err := p.send(tail); err != nil {
		return sum, err
	}
	sum.Truncated, sum.Continue = true, first
	sum.TokensUsed = p.o.Counter.Count(p.sent.Bytes())
	return sum, nil
}

// closeSalient sends the rest of the first page of an output over budget
// as the salience pass composes it after the live head: the salient blocks,
// or a source file's outline, or passing tests' progress folded, and the
// tail, within avail tokens. done is false when the pass has nothing to
// show: the caller then sends head and tail as without it.
func (p *Pipe) closeSalient(sum *Summary, ref string, avail int) (done bool, err error) {
	r := p.scan.Close()
	w := budget.Window(p.o.Budget)
	win := p.tailWindow()
	tail, _, _ := p.o.Layer.region(win, max(0, len(win)-w), len(win))
	if err := p.scrubBlocks(r, ref); err != nil {
		return true, err
	}
	tool := p.o.Tool
	var lastMark string
	mark := func(g budget.Gap) string {
		// The live head is shown: what is left out starts after it.
		lastMark = budget.Marker(int(max(0, int64(g.Lines)-p.liveLines)), max(0, g.Bytes()-p.liveRaw), ref, tool)
		return lastMark
	}
	// A source file's outline, when there is no failure to show, takes
	// the place of the middle after the marker: at most a quarter of the
	// budget, whole lines.
	var outline []byte
	if len(p.outline) > 0 && len(r.Blocks) == 0 {
		outline = []byte("--- definitions in the lines left out (read them with --offset N --limit M) ---\n")
		room := p.o.Budget / 4
		for _, l := range p.outline {
			next := append(append(append([]byte{}, outline...), l...), '\n')
			if p.o.Counter.Count(next) > room {
				break
			}
			outline = next
		}
		outline = p.o.Layer.Scrub(outline)
	}
	left := avail - 1 // a newline after the live head, should it need one
	if outline != nil {
		left -= p.o.Counter.Count(outline) + 1
	}
	page := salience.Compose(p.o.Counter, left, nil, tail, p.size, p.lines, r, mark)
	if len(r.Blocks) == 0 && !page.Folded && outline == nil {
		return false, nil
	}
	data := page.Data
	if outline != nil && lastMark != "" {
		if i := bytes.LastIndex(data, []byte(lastMark)); i >= 0 {
			at := i + len(lastMark)
			if at < len(data) && data[at] == '\n' {
				at++
			}
			data = append(append(append([]byte{}, data[:at]...), outline...), data[at:]...)
		}
	}
	if n := p.sent.Len(); n > 0 && p.sent.Bytes()[n-1] != '\n' {
		data = append([]byte{'\n'}, data...)
	}
	if err := p.send(data); err != nil {
		return true, err
	}
	sum.Truncated, sum.Continue = true, ref
	sum.TokensUsed = p.o.Counter.Count(p.sent.Bytes())
	return true, nil
}

// growHead sends more of the head, whole lines, up to the share the live
// head has without the salience pass, when those bytes hold no secret (so
// that what was sent keeps counting raw bytes).
func (p *Pipe) growHead() {
	// The same share as the live head has without the pass, which never
	// takes the room the marker line needs.
	limit := min(p.o.Budget*budget.HeadShare/100, p.o.Budget-markerReserve(p.o.Counter, p.o.Tool))
	room := limit - p.o.Counter.Count(p.sent.Bytes())
	if room <= 0 || p.liveRaw >= int64(len(p.head)) {
		return
	}
	end := len(p.head)
	if int64(end) < p.size {
		end = max(int(p.liveRaw), len(p.head)-margin) // leave the margin for a secret across the cut
	}
	raw := p.head[p.liveRaw:end]
	if fs := p.o.Layer.Scrubber.Find(p.head[p.liveRaw:]); len(fs) > 0 {
		return
	}
	n, _ := p.o.Counter.Head(raw, room)
	if n < len(raw) {
		n = bytes.LastIndexByte(raw[:n], '\n') + 1
	}
	if n <= 0 || p.send(raw[:n]) != nil {
		return
	}
	p.liveRaw += int64(n)
	p.liveLines += int64(bytes.Count(raw[:n], []byte{'\n'}))
}

// scrubBlocks puts the daemon's scrub (the second layer) on the blocks a
// first page may show: each read again from the stored output with margin
// on both sides, so that a secret cut by the block's edge is seen whole. A
// hole's blocks, which the tool scrubbed, are scrubbed again as they are.
func (p *Pipe) scrubBlocks(r *salience.Result, ref string) error {
	var rd *pages.Reader
	defer func() {
		if rd != nil {
			rd.Close()
		}
	}()
	for i := range r.Blocks {
		b := &r.Blocks[i]
		if b.Rule == insertedRule {
			b.Text = p.o.Layer.Scrub(b.Text)
			continue
		}
		lo, hi := max(0, b.Start-margin), min(p.size, b.End+margin)
		if p.holes > 0 {
			// The margin stops at a hole: its bytes are not stored.
			if end := p.lastHole[0] + p.lastHole[1]; b.Start >= end {
				lo = max(lo, end)
			} else if b.End <= p.firstHole {
				hi = min(hi, p.firstHole)
			}
		}
		var buf []byte
		if p.inMem() && p.holes == 0 {
			buf = p.mem[lo:hi]
		} else {
			if rd == nil {
				var err error
				if rd, err = p.o.Store.Open(p.o.Session, ref); err != nil {
					return err
				}
			}
			buf = make([]byte, hi-lo)
			if n, err := rd.ReadAt(buf, lo); n < len(buf) {
				// Not readable as stored: show nothing of it rather than
				// something unscrubbed.
				b.Text = nil
				_ = err
				continue
			}
		}
		out, _, _ := p.o.Layer.region(buf, int(b.Start-lo), int(b.End-lo))
		b.Text = out
	}
	kept := r.Blocks[:0]
	for _, b := range r.Blocks {
		if b.Text != nil {
			kept = append(kept, b)
		}
	}
	r.Blocks = kept
	return nil
}

func (p *Pipe) send(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	p.sent.Write(b)
	return p.o.Send(b)
}

// inMem reports whether mem holds the whole output. It still does after
// commit made a page source of it (commit copies mem to the store and leaves
// mem in place); only toStore, for an output over memLimit, moves it out, and
// from then on the kept tail is the only copy in memory.
func (p *Pipe) inMem() bool { return p.entry == nil || p.mem != nil }

// restBytes returns the output after what was sent live (n bytes).
func (p *Pipe) restBytes(n int64) []byte {
	if p.inMem() {
		return p.mem[int64(len(p.mem))-n:]
	}
	return p.tail[max(0, int64(len(p.tail))-n):]
}

// tailWindow returns the last bytes of the output.
func (p *Pipe) tailWindow() []byte {
	if p.inMem() {
		return p.mem[max(0, len(p.mem)-p.tailKeep):]
	}
	return p.tail[max(0, len(p.tail)-p.tailKeep):]
}

// gapLines counts the lines of output[liveRaw:tailRaw], a partial line
// counting as one: every newline, minus those sent live and those of the tail
// (which the kept tail buffer covers).
func (p *Pipe) gapLines(tailRaw int64) int64 {
	if tailRaw <= p.liveRaw {
		return 0
	}
	win := p.tailWindow()
	start := p.size - int64(len(win))
	n := p.lines - p.liveLines - int64(bytes.Count(win[tailRaw-start:], []byte{'\n'}))
	if tailRaw-start > 0 && win[tailRaw-start-1] != '\n' {
		n++
	}
	return max(n, 1)
}

// commit makes the stored output a page source and returns its id.
func (p *Pipe) commit() (string, error) {
	if p.entry == nil {
		e, err := p.o.Store.Create(p.o.Session, p.o.Tool)
		if err != nil {
			return "", err
		}
		if _, err := e.Write(p.mem); err != nil {
			e.Discard()
			return "", err
		}
		p.entry = e
	}
	id, err := p.entry.Commit(pages.Meta{"tool": p.o.Tool, "lines": fmt.Sprint(p.lines)})
	if err != nil {
		return "", err
	}
	return id, nil
}

// release gives the Pipe's buffers back for the next Pipe; nothing may use
// mem or tail afterwards.
func (p *Pipe) release() {
	if p.bufs != nil {
		putBuffers(p.bufs)
		p.bufs, p.mem, p.tail = nil, nil, nil
	}
}

func (p *Pipe) discard() {
	if p.entry != nil {
		p.entry.Discard()
		p.entry = nil
	}
}

// PageResult is one continuation page.
type PageResult struct {
	Data    []byte
	Tokens  int
	Next    string // reference of the next page, when HasMore
	HasMore bool
}

// Page cuts the page of a stored output that starts where ref points: whole
// lines within budget tokens (a line longer than the budget is cut inside),
// scrubbed by l. A secret that crosses the end of a page moves the end past
// it, so the next page starts after it; concatenated, the pages are the whole
// output, scrubbed. fill makes the bytes of the output's holes (see Hole);
// its errors are returned as they are.
func Page(st *pages.Store, l *Layer, c *budget.Counter, session, ref string, tokens int, fill pages.FillFunc) (PageResult, error) {
	r, err := st.Open(session, ref)
	if err != nil {
		return PageResult{}, err
	}
	defer r.Close()
	r.SetFill(fill)
	id, off, size := r.ID(), r.Offset(), r.Size()
	tokens = max(tokens, budget.MinBudget)
	win := int64(budget.Window(tokens))
	lo, hi := max(0, off-margin), min(size, off+win+margin)
	buf := make([]byte, hi-lo)
	if n, err := r.ReadAt(buf, lo); n < len(buf) {
		return PageResult{}, fmt.Errorf("read stored output: %w", err)
	}
	a := int(off - lo)
	cand := buf[a:min(len(buf), a+int(win))]
	want := tokens
	for range 4 {
		n, _ := c.Head(cand, want)
		out, _, ne := l.region(buf, a, a+n)
		used := c.Count(out)
		if used <= tokens || n == 0 {
			next := lo + int64(ne)
			pr := PageResult{Data: out, Tokens: used, HasMore: next < size}
			if pr.HasMore {
				pr.Next = pages.FormatRef(id, next)
			}
			return pr, nil
		}
		// Placeholders are longer than what they replace: ask for less.
		want = max(1, want-(used-tokens)-8)
	}
	return PageResult{}, fmt.Errorf("page at %d does not fit %d tokens", off, tokens)
}
