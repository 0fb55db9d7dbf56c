package inside

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/outline"
	"github.com/contextd/contextd/salience"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// sniffLen is how much of a file is checked for NUL bytes to tell binary from text,
// as git and grep do.
const sniffLen = 8000

// readFile is safe_read's I/O, run in tool mode inside the sandbox. It
// scrubs the file's own bytes and numbers the lines afterwards, so that a
// secret is found as it is in the file (a PEM key's lines are not broken up
// by numbers) and its placeholder stands for exactly those bytes: written
// back by safe_write, the file comes out byte for byte. Line numbers stay the
// file's: a secret spanning lines takes the numbers of the lines it hides.
func readFile(root *workspace.Root, op toolproto.Op, sc *scrub.Scrubber, fw *toolproto.Writer) error {
	return guardFault(op.Display, func() error { return readMapped(root, op, sc, fw) })
}

// guardFault runs fn, which may touch a mapped file. A large file is mapped,
// not copied (mapWhole); should it shrink while mapped, touching its lost end
// faults. The runtime then panics instead of killing the process, and this
// turns the panic into an error that says what happened. (The scrub works in
// fn's goroutine on the windows a response shows; only a budget of over 16k
// tokens makes it spread a window over more goroutines, where a fault still
// ends the tool, as an internal error.)
func guardFault(display string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault {
				panic(r)
			}
			err = fmt.Errorf("safe_read: %s shrank while it was read; read it again: %w", display, catalog.ErrIO)
		}
	}()
	return fn()
}

// readMapped is readFile's work.
func readMapped(root *workspace.Root, op toolproto.Op, sc *scrub.Scrubber, fw *toolproto.Writer) error {
	f, err := root.OpenRead(op.Rel)
	if err != nil {
		return fmt.Errorf("safe_read: %w", err)
	}
	defer f.Close()
	// The file opened, before any secret of it: safe_write puts a secret
	// back only into this file. A file that cannot be named gets no frame,
	// and its secrets can be put back nowhere.
	if id, err := workspace.Identify(f); err == nil {
		if err := fw.File(id); err != nil {
			return err
		}
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(sniffLen)
	if bytes.IndexByte(head, 0) >= 0 {
		return fmt.Errorf("safe_read: %s looks binary (NUL bytes): %w", op.Display, catalog.ErrNotRegular)
	}
	first, limit := max(op.Offset, 1), -1
	if op.Limit > 0 {
		limit = op.Limit
	}
	var sel selection
	if first == 1 && limit < 0 {
		// The whole file, the common case: mapped if large, else one read
		// into a buffer mapped in advance (see prefaulted).
		buf, release, err := mapWhole(f)
		if buf == nil && err == nil {
			buf, release, err = readWhole(f, br)
		}
		if err != nil {
			return fmt.Errorf("safe_read: %s: %w", op.Display, err)
		}
		defer release()
		sel = selection{buf: buf, a: 0, e: len(buf)}
	} else if sel, err = selectLines(br, first, limit); err != nil {
		return fmt.Errorf("safe_read: %s: %w", op.Display, err)
	}
	if first > 1 && sel.lines < first {
		return fmt.Errorf("safe_read: offset %d is past the end of %s (%d lines): %w", first, op.Display, sel.lines, catalog.ErrBadInput)
	}
	fw.Mark("read")
	fs, gapFrom, gapTo := findSelected(sc, sel.buf, sel.a, sel.e, op.Window)
	fw.Mark("scrub")
	var extra *gapExtra
	if gapFrom < gapTo && op.Salience != nil {
		var rules []salience.UserRule
		for _, r := range op.Salience.Rules {
			rules = append(rules, salience.UserRule{Name: r.Name, Pattern: r.Pattern, Kind: r.Kind, Before: r.Before, After: r.After})
		}
		set, err := salience.Compile(rules)
		if err != nil {
			return fmt.Errorf("safe_read: salience rules: %v: %w", err, catalog.ErrConfig)
		}
		extra = scanGap(sc, set, sel.buf, sel.a, gapFrom, gapTo, first, op.Display)
		fw.Mark("salience")
	}
	err = emitNumbered(fw, sel.buf, sel.base, sel.a, sel.e, first, fs, gapFrom, gapTo, extra)
	fw.Mark("emit")
	return err
}

// renderGap is safe_read's page mode: it reads the blocks of a gap of an
// earlier read (op.Gap) that hold bytes [op.Skip, op.Skip+op.N) of its
// rendering again, and writes those bytes as raw frames: unscrubbed, since
// the daemon scrubs the page it cuts from them, with a margin this range does
// not have. A block whose bytes are not those of the first read refuses the
// page: a page must continue the output it was cut from, not mix two versions
// of the file.
func renderGap(root *workspace.Root, op toolproto.Op, fw *toolproto.Writer) error {
	g := op.Gap
	if !g.Valid() || g.To-g.From > 1<<40 || op.Skip < 0 || op.N <= 0 || op.Skip+op.N > g.Len {
		return fmt.Errorf("safe_read: bad page request (%d+%d of a %d-byte gap): %w", op.Skip, op.N, g.Len, catalog.ErrInternal)
	}
	f, err := root.OpenRead(op.Rel)
	if err != nil {
		return fmt.Errorf("safe_read: %w", err)
	}
	defer f.Close()
	changed := fmt.Errorf("safe_read: %s changed since it was read, so the rest of that read is gone: %w", op.Display, catalog.ErrUnknownContinuation)
	buf, release := prefaulted(int(min(g.Block, g.To-g.From)))
	defer release()
	out := make([]byte, 0, 64<<10)
	from, to := op.Skip, op.Skip+op.N
	// The first block whose rendering reaches past from.
	i := sort.Search(len(g.Blocks), func(i int) bool { return i+1 == len(g.Blocks) || g.Blocks[i+1].At > from })
	for ; i < len(g.Blocks) && g.Blocks[i].At < to; i++ {
		b := g.Blocks[i]
		lo := g.From + int64(i)*g.Block
		blk := buf[:min(g.Block, g.To-lo)]
		if _, err := f.ReadAt(blk, lo); err == io.EOF || err == io.ErrUnexpectedEOF {
			return changed
		} else if err != nil {
			return fmt.Errorf("safe_read: %s: read: %v: %w", op.Display, err, catalog.ErrIO)
		}
		if crc32.Checksum(blk, castagnoli) != b.CRC {
			return changed
		}
		// Walk the block in pieces: those before the range are only
		// measured, those that overlap it rendered and the overlap sent.
		z, pos := numberer{line: b.Line, atStart: b.AtStart}, b.At
		for p := 0; p < len(blk) && pos < to; {
			k := min(len(blk), p+16<<10)
			ahead := z
			if n, _ := ahead.measure(blk[p:k]); pos+n <= from {
				z, pos, p = ahead, pos+n, k
				continue
			}
			out = z.put(out[:0], blk[p:k])
			if err := fw.Raw(out[max(0, from-pos):min(int64(len(out)), to-pos)]); err != nil {
				return err
			}
			pos += int64(len(out))
			p = k
		}
	}
	fw.Mark("render")
	return nil
}

// mapWhole maps a file of at least a MiB whole, read-only, its pages
// populated at once: on a virtual machine reading 10 MB into even a
// prefaulted buffer took 11-21 ms, mapping it 0.5 ms (the page cache's pages
// are mapped, nothing is zeroed or copied). It returns nil, and no error,
// for a smaller file or when the file cannot be mapped: read it instead.
// The mapping is the file as it is: an append after fstat is not seen, and
// a truncation faults (see readFile).
func mapWhole(f *os.File) ([]byte, func(), error) {
	st, err := f.Stat()
	if err != nil || st.Size() < 1<<20 || st.Size() > 1<<40 {
		return nil, nil, nil
	}
	flags := unix.MAP_PRIVATE
	if st.Size() <= populateMax {
		flags |= unix.MAP_POPULATE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, flags)
	if err != nil {
		return nil, nil, nil
	}
	return b, func() { unix.Munmap(b) }, nil
}

// populateMax is the largest file mapped with its pages populated at once.
// A larger one (a multi-gigabyte log) is faulted in as the one pass over it
// reaches each part, with the kernel's read-ahead, instead of being read
// whole before anything else happens. Its page cache is charged to the
// tool's scope, where clean pages are reclaimed under the memory limit, not
// counted against it as a read into the heap would be.
const populateMax = 256 << 20

// readWhole reads the rest of f (br wraps it and may hold its start).
func readWhole(f *os.File, br *bufio.Reader) ([]byte, func(), error) {
	size := int64(0)
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	buf, release := prefaulted(int(size) + 1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew: the heap takes over
		}
		n, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, release, nil
		}
		if err != nil {
			release()
			return nil, func() {}, fmt.Errorf("read: %v: %w", err, catalog.ErrIO)
		}
	}
}

// prefaulted returns an empty buffer of capacity n whose pages are mapped
// already (MAP_POPULATE), and the function that frees it. A tool runs in a
// fresh process for every call, and on a virtual machine each first touch of
// a page can cost tens of microseconds: a 10 MB file is 2,560 of them. One
// mmap that maps them all up front is far cheaper. Small buffers, or a failed
// mmap, come from the heap.
func prefaulted(n int) ([]byte, func()) {
	if n >= 1<<20 {
		b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err == nil {
			return b[:0], func() { unix.Munmap(b) }
		}
	}
	return make([]byte, 0, n), func() {}
}

// selection is the lines a read asked for, buf[a:e], with up to scrubMargin
// bytes of the file on either side: a secret that crosses the selection's
// edge is still seen whole.
type selection struct {
	buf   []byte
	base  int64 // the file offset of buf[0]
	a, e  int
	lines int // lines of the file seen (all of them when the read went to the end)
}

// selectLines reads lines first.. (at most limit; -1 for all) from r.
func selectLines(r *bufio.Reader, first, limit int) (selection, error) {
	var s selection
	s.a = -1
	atStart := true
	for {
		piece, err := r.ReadSlice('\n')
		if len(piece) > 0 {
			if atStart {
				if limit >= 0 && s.lines == first-1+limit {
					// Past the selection: keep a margin of what follows.
					s.e = len(s.buf)
					s.buf = append(s.buf, piece...)
					more := make([]byte, max(0, scrubMargin-len(piece)))
					n, _ := io.ReadFull(r, more)
					s.buf = append(s.buf, more[:n]...)
					return s, nil
				}
				s.lines++
				if s.lines == first {
					s.a = len(s.buf)
				}
			}
			s.buf = append(s.buf, piece...)
			if s.a < 0 && len(s.buf) > 2*scrubMargin {
				// Before the selection only the margin is kept.
				s.base += int64(len(s.buf) - scrubMargin)
				s.buf = append(s.buf[:0], s.buf[len(s.buf)-scrubMargin:]...)
			}
			atStart = piece[len(piece)-1] == '\n'
		}
		switch {
		case err == io.EOF:
			if s.a < 0 {
				s.a = len(s.buf)
			}
			s.e = len(s.buf)
			return s, nil
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return s, fmt.Errorf("read: %v: %w", err, catalog.ErrIO)
		}
	}
}

// findSelected finds the secrets of buf[a:e] (offsets in buf; a secret may
// reach past a or e). With a window (> 0) and a long selection it scrubs only
// the first and last window bytes, the part a first response can show, and
// returns the middle, buf[gapFrom:gapTo], which holds no finding: it is not
// sent at all (a gap frame stands for it), and a continuation page that needs
// it has it read again, in the sandbox, and scrubbed by the daemon.
func findSelected(sc *scrub.Scrubber, buf []byte, a, e, window int) (fs []scrub.Finding, gapFrom, gapTo int) {
	if window <= 0 || e-a <= 2*window+2*scrubMargin {
		fs, _, _ = sc.FindRange(buf, a, e, scrubMargin)
		return fs, e, e
	}
	head, _, headEnd := sc.FindRange(buf, a, a+window, scrubMargin)
	tail, tailStart, _ := sc.FindRange(buf, e-window, e, scrubMargin)
	if headEnd >= tailStart {
		fs, _, _ = sc.FindRange(buf, a, e, scrubMargin)
		return fs, e, e
	}
	return append(head, tail...), headEnd, tailStart
}

// emitNumbered writes buf[a:e] (buf[0] is at file offset base) as numbered
// lines ("%6d\t<line>\n", the first one numbered line), each finding as a
// secret frame, and buf[gapFrom:gapTo], when not empty, as one gap frame.
// No finding may lie in the gap. A last line without a newline gets one.
func emitNumbered(fw *toolproto.Writer, buf []byte, base int64, a, e, line int, fs []scrub.Finding, gapFrom, gapTo int, extra *gapExtra) error {
	// One buffer of up to about a MiB, sent and reused: a large file's
	// numbered copy never exists whole. The gap is not rendered at all.
	out, release := prefaulted(min(2*(e-a-(gapTo-gapFrom)), 1<<20) + 1<<16)
	defer release()
	flush := func() error {
		err := fw.Text(out)
		out = out[:0]
		return err
	}
	z := numberer{line: line, atStart: true}
	// text numbers buf[p:q], which holds no secret.
	text := func(p, q int) error {
		for p < q {
			if p >= gapFrom && p < gapTo {
				if err := flush(); err != nil {
					return err
				}
				end := min(q, gapTo)
				g := toolproto.Gap{From: base + int64(p), To: base + int64(end), Line: z.line, AtStart: z.atStart,
					Block: toolproto.GapBlockSize(int64(end - p))}
				// One pass over the gap, 64 KiB at a time, so that the CRC
				// and the newline count read each piece from the cache.
				for k := p; k < end; k += int(g.Block) {
					b := toolproto.GapBlock{At: g.Len, Line: z.line, AtStart: z.atStart}
					for blkEnd, j := min(end, k+int(g.Block)), k; j < blkEnd; j += 64 << 10 {
						piece := buf[j:min(blkEnd, j+64<<10)]
						b.CRC = crc32.Update(b.CRC, castagnoli, piece)
						n, lines := z.measure(piece)
						g.Len, g.Lines = g.Len+n, g.Lines+lines
					}
					g.Blocks = append(g.Blocks, b)
				}
				if extra != nil {
					g.Salient, g.Failures, g.Outline = extra.salient, extra.failures, extra.outline
				}
				fw.Mark("gap")
				if err := fw.Gap(g); err != nil {
					return err
				}
				p = end
				continue
			}
			end := q
			if p < gapFrom {
				end = min(q, gapFrom)
			}
			for p < end {
				k := min(end, p+(1<<20))
				out = z.put(out, buf[p:k])
				p = k
				if len(out) >= 1<<20 {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	at := a
	for _, f := range fs {
		if f.End <= at || f.Start >= e {
			continue
		}
		if err := text(at, max(at, f.Start)); err != nil {
			return err
		}
		if z.atStart {
			out = appendNum(out, z.line)
			z.atStart = false
		}
		if err := flush(); err != nil {
			return err
		}
		if err := fw.Secret(f.Rule, buf[f.Start:f.End]); err != nil {
			return err
		}
		hidden := buf[max(at, f.Start):min(e, f.End)]
		z.line += bytes.Count(hidden, []byte{'\n'})
		z.atStart = len(hidden) > 0 && hidden[len(hidden)-1] == '\n'
		at = min(e, f.End)
	}
	if err := text(at, e); err != nil {
		return err
	}
	if !z.atStart && e > a {
		out = append(out, '\n')
	}
	return flush()
}

// castagnoli is the CRC-32C table: hardware-assisted on amd64 and arm64, so a
// 10 MB gap costs about a millisecond.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// numberer renders text as safe_read shows it, each line prefixed with its
// number ("%6d\t"). A line's number is written with its first byte, so that
// rendering a text in pieces cut anywhere gives the rendering of the whole,
// and a piece's rendering depends only on where it starts (line, atStart):
// a gap's bytes, read again for a page, come out as they would have first.
type numberer struct {
	line    int  // the line the next byte is in
	atStart bool // the next byte starts it
}

// put appends the rendering of text to out.
func (z *numberer) put(out, text []byte) []byte {
	for len(text) > 0 {
		if z.atStart {
			out = appendNum(out, z.line)
			z.atStart = false
		}
		nl := bytes.IndexByte(text, '\n')
		if nl < 0 {
			return append(out, text...)
		}
		out = append(out, text[:nl+1]...)
		text = text[nl+1:]
		z.line++
		z.atStart = true
	}
	return out
}

// measure returns the length of text's rendering and its newlines, and moves
// on as put would, without rendering: counting a 10 MB gap's newlines is all
// it costs.
func (z *numberer) measure(text []byte) (n, lines int64) {
	if len(text) == 0 {
		return 0, 0
	}
	lines = int64(bytes.Count(text, []byte{'\n'}))
	// The lines that start in text: the first one if text starts it, and one
	// after every newline but a final one.
	first, starts := z.line+1, lines
	if z.atStart {
		first, starts = z.line, starts+1
	}
	last := text[len(text)-1] == '\n'
	if last {
		starts--
	}
	z.line += int(lines)
	z.atStart = last
	return int64(len(text)) + numWidths(int64(first), starts), lines
}

// numWidths is the length of the numbers appendNum writes for the count lines
// from first on: at least six digits and a tab each.
func numWidths(first, count int64) int64 {
	var sum int64
	end := first + count
	for digits, limit := int64(6), int64(1_000_000); first < end; digits, limit = digits+1, limit*10 {
		if first >= limit {
			continue
		}
		upto := min(end, limit)
		sum += (upto - first) * (digits + 1)
		first = upto
	}
	return sum
}

// appendNum appends a line number as "%6d\t".
func appendNum(b []byte, n int) []byte {
	var d [20]byte
	num := strconv.AppendInt(d[:0], int64(n), 10)
	for i := len(num); i < 6; i++ {
		b = append(b, ' ')
	}
	b = append(b, num...)
	return append(b, '\t')
}

// gapExtra is what the first page may show of a gap in its place.
type gapExtra struct {
	salient  []toolproto.SalientBlock
	failures int
	outline  []string
}

// maxOutline bounds the definitions a gap frame lists.
const maxOutline = 60

// scanGap runs the salience scan over buf[gapFrom:gapTo] (the middle of a
// long read, which is not sent) and, for a source file read from its first
// line, lists the definitions that lie there. A block's secrets are replaced
// by "[REDACTED:<rule>]" here (the daemon, which numbers placeholders in the
// session, scrubs them again); its lines are numbered as the output's.
func scanGap(sc *scrub.Scrubber, set *salience.Set, buf []byte, a, gapFrom, gapTo, first int, name string) *gapExtra {
	x := &gapExtra{}
	// The line gapFrom is in, as the file numbers it, and as the output does.
	fileLine := first + bytes.Count(buf[a:gapFrom], []byte{'\n'})
	// Only the failures are wanted from the middle: the sparse scan finds
	// them without passing every line through the rules.
	r := set.ScanFailures(buf[gapFrom:gapTo])
	x.failures = r.Total
	for _, b := range r.Blocks {
		lo, hi := gapFrom+int(b.Start), gapFrom+int(b.End)
		fs, _, _ := sc.FindRange(buf, lo, hi, scrubMargin)
		text := buf[lo:hi]
		if len(fs) > 0 {
			for i := range fs {
				fs[i].Start, fs[i].End = max(fs[i].Start, lo)-lo, min(fs[i].End, hi)-lo
			}
			text = scrub.Replace(text, fs, func(f scrub.Finding) string { return "[REDACTED:" + f.Rule + "]" })
		}
		if b.Clipped && len(text) > salience.MaxBlockBytes {
			text = text[:salience.MaxBlockBytes]
		}
		z := numberer{line: fileLine + b.FirstLine - 1, atStart: true}
		out := z.put(nil, text)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		kind := toolproto.BlockFailure
		if b.Kind == salience.Summary {
			kind = toolproto.BlockSummary
		}
		x.salient = append(x.salient, toolproto.SalientBlock{
			FirstLine: fileLine - first + b.FirstLine, LastLine: fileLine - first + b.LastLine,
			Rule: b.Name, Family: b.Family, Kind: kind, Text: string(out)})
	}
	if first == 1 && a == 0 && outline.Lang(name) != "" {
		defs, _ := outline.Of(name, buf)
		lastLine := fileLine + bytes.Count(buf[gapFrom:gapTo], []byte{'\n'})
		x.outline = outline.Render(defs, fileLine, lastLine, maxOutline)
	}
	return x
}
