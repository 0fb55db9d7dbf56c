package toolproto

import "errors"

// A sandboxed tool does not write its output to the daemon as it is: it
// writes frames, so that the secrets it took out travel apart from the text
// and the daemon can number them in the session (the tool cannot: the
// numbering is the session's, and the sandbox must not see the session's
// secrets). A frame is a type byte, a uvarint length and the payload.
const (
	// frameText is output the tool scrubbed (the first layer).
	frameText = 'T'
	// frameRaw is output the tool did not scrub: a gap read again for a
	// continuation page, which the daemon cuts the page from and scrubs
	// (its layer scrubs every byte that leaves).
	frameRaw = 'R'
	// frameGap stands for a run of the output the tool did not send (JSON
	// Gap): the middle of a long read, which the first response does not
	// show. The daemon keeps the frame, not the bytes.
	frameGap = 'G'
	// frameSecret is a secret the tool took out at this point of the text:
	// JSON Secret. The daemon writes the session's placeholder here.
	frameSecret = 'S'
	// frameFile names the file the tool opened (JSON workspace.FileID):
	// safe_read sends it before any text, so that the secrets that follow
	// are tied to that file; safe_write after the write, for the file it
	// made.
	frameFile = 'F'
	// frameMeta is the tool's report (JSON Meta), the last frame.
	frameMeta = 'M'
)

// maxFrame bounds one frame; text is written in pieces well below it.
const maxFrame = 16 << 20

// maxSmallFrame bounds a secret, gap or report frame, which the reader
// gathers whole.
const maxSmallFrame = 1 << 20

var errBadFrame = errors.New("malformed output frame from the sandboxed tool")

// Secret is a secret frame's payload.
type Secret struct {
	Rule   string `json:"rule"`
	Secret []byte `json:"secret"` // bytes as they were (base64 in JSON: a secret need not be UTF-8)
}

// Gap describes a gap: the numbered rendering of the file's bytes
// [From, To), which a page gets by having them read and rendered again
// (safe_read's page mode, with the gap in Op.Gap).
type Gap struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Line    int   `json:"line"`     // the line From is in
	AtStart bool  `json:"at_start"` // From starts that line: its number is part of the gap
	Len     int64 `json:"len"`      // bytes of the rendering
	Lines   int64 `json:"lines"`    // newlines in it
	// Blocks cut [From, To) in runs of Block bytes (the last one shorter),
	// so that a page reads and renders only the blocks it shows, not the
	// whole gap.
	Block  int64      `json:"block"`
	Blocks []GapBlock `json:"blocks"`
	// Salient are the failure blocks the tool's salience scan found in the
	// gap, rendered as the output shows them, secrets replaced; Failures
	// is how many it found in all. A first page shows them between head
	// and tail.
	Salient  []SalientBlock `json:"salient,omitempty"`
	Failures int            `json:"failures,omitempty"`
	// Outline lists the definitions of a source file that lie in the gap,
	// one rendered line each, for the first page to show in its place.
	Outline []string `json:"outline,omitempty"`
}

// SalientBlock is a block of a gap's lines worth showing.
type SalientBlock struct {
	// FirstLine and LastLine are line numbers of the output (the read's
	// first line is 1).
	FirstLine int    `json:"first_line"`
	LastLine  int    `json:"last_line"`
	Rule      string `json:"rule"`
	Family    string `json:"family"`
	// Kind is what the rule found: BlockFailure or BlockSummary.
	Kind string `json:"kind,omitempty"`
	Text string `json:"text"`
}

// The kinds of a SalientBlock.
const (
	BlockFailure = "failure"
	BlockSummary = "summary"
)

// GapBlock is where a block of a gap starts, and what its bytes were.
type GapBlock struct {
	At      int64 `json:"at"`       // offset of its rendering in the gap's
	Line    int   `json:"line"`     // the line its first byte is in
	AtStart bool  `json:"at_start"` // its first byte starts that line
	// CRC is the CRC-32C of its bytes: a page is made only from the bytes
	// the first read saw; an edit of them refuses it.
	CRC uint32 `json:"crc"`
}

// GapBlockSize is the block size for a gap of n bytes: 256 KiB, or more for
// a gap of over 128 MiB, so that a gap frame stays under 512 blocks.
func GapBlockSize(n int64) int64 { return max(256<<10, (n+511)/512) }

// Valid checks a gap frame's numbers against each other: the daemon keeps
// it, and a page acts on it later.
func (g *Gap) Valid() bool {
	if g.From < 0 || g.To <= g.From || g.Len < g.To-g.From || g.Lines < 0 || g.Line < 1 || g.Block < 1 ||
		int64(len(g.Blocks)) != (g.To-g.From+g.Block-1)/g.Block {
		return false
	}
	at := int64(-1)
	for i, b := range g.Blocks {
		if b.At <= at || b.At >= g.Len || b.Line < 1 || (i == 0 && (b.At != 0 || b.Line != g.Line || b.AtStart != g.AtStart)) {
			return false
		}
		at = b.At
	}
	return true
}

// Meta is what a tool reports besides its output.
type Meta struct {
	// ExitCode is safe_bash's command's exit status (128+N for signal N).
	ExitCode *int `json:"exit_code,omitempty"`
	// Findings counts the first layer's catches by rule.
	Findings map[string]int `json:"findings,omitempty"`
	// Stages: milliseconds from the tool's start to the end of each of its
	// stages, for the daemon's debug log.
	Stages map[string]float64 `json:"stages,omitempty"`
}
