package audit

import (
	"fmt"
	"strings"
	"time"
)

// maxSummaryArgs bounds the arguments shown in a summary line.
const maxSummaryArgs = 160

// Summary is the record on one line for a person: the journal's MESSAGE and
// `contextd audit tail`. It leaves out the time, which both show their own way.
func (r *Record) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d ", r.Seq)
	if r.Kind == KindEgress {
		// No reason: the server's connections are the record.
		fmt.Fprintf(&b, "%s %s", r.Kind, orQuestion(r.Tool))
		r.egressSummary(&b)
		if r.Session != "" {
			fmt.Fprintf(&b, " session=%s", r.Session)
		}
		return b.String()
	}
	if r.Kind != KindCall {
		fmt.Fprintf(&b, "%s: %s", r.Kind, r.Reason)
		return b.String()
	}
	fmt.Fprintf(&b, "%s exit=%d", orQuestion(r.Tool), r.ExitCode)
	if r.Error != "" {
		fmt.Fprintf(&b, " error=%s", r.Error)
	}
	fmt.Fprintf(&b, " %s %s %dtok", (time.Duration(r.DurationMS) * time.Millisecond).String(), size(r.BytesProduced), r.TokensReturned)
	if r.Truncated {
		b.WriteString(" truncated")
	}
	if r.ContinueOf != "" {
		fmt.Fprintf(&b, " continues=%s", r.ContinueOf)
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(&b, " findings=%s", strings.ReplaceAll(counts(r.Findings), " ", ","))
	}
	if r.SecondLayer > 0 {
		fmt.Fprintf(&b, " second-layer=%d", r.SecondLayer)
	}
	r.egressSummary(&b)
	if r.Session != "" {
		fmt.Fprintf(&b, " session=%s", r.Session)
	}
	if len(r.Args) > 0 {
		fmt.Fprintf(&b, " args=%s", clip(string(r.Args), maxSummaryArgs))
	}
	return b.String()
}

// egressSummary counts the connections through the egress proxy, and the
// refused among them.
func (r *Record) egressSummary(b *strings.Builder) {
	if len(r.Egress) == 0 {
		return
	}
	fmt.Fprintf(b, " egress=%d", len(r.Egress))
	if n := refusedCount(r.Egress); n > 0 {
		fmt.Fprintf(b, " egress-refused=%d", n)
	}
}

func orQuestion(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// size renders a byte count the short way: 512B, 3.4kB, 12MB.
func size(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%dB", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1fkB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1fMB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1fGB", float64(n)/1e9)
}
