package record

import "github.com/contextd/contextd/mcp/jsonrpc"

// exchange is one line of a transcript: a message that asks or tells (a
// request, notification or batch), with the answer to it when the record
// holds one; or an answer whose question the record does not hold.
type exchange struct {
	req *Entry // nil for an orphan answer
	// resp is the entry answering req (a response or error traveling the
	// other way), nil when none is recorded.
	resp *Entry
	// reply is set instead when the engine answered req itself (a refusal).
	reply []byte
	// orphan is an answer with no recorded request.
	orphan *Entry
}

// exchanges pairs the record's entries, in the order of their first
// message.
func exchanges(r *Record) []exchange {
	bySeq := make(map[uint64]int, len(r.Entries))
	for i := range r.Entries {
		bySeq[r.Entries[i].Seq] = i
	}
	// answer[i] is the index of the entry answering entry i.
	answer := map[int]int{}
	answered := map[int]bool{}
	for i := range r.Entries {
		e := &r.Entries[i]
		if !isAnswer(e) || e.Corr == 0 {
			continue
		}
		q, ok := bySeq[e.Corr]
		if !ok || q == i || isAnswer(&r.Entries[q]) || r.Entries[q].Dir == e.Dir {
			continue
		}
		if _, dup := answer[q]; dup {
			continue // a second answer to one request stays on its own
		}
		answer[q] = i
		answered[i] = true
	}
	var out []exchange
	for i := range r.Entries {
		e := &r.Entries[i]
		switch {
		case answered[i]:
			continue
		case isAnswer(e):
			out = append(out, exchange{orphan: e})
		default:
			x := exchange{req: e}
			if a, ok := answer[i]; ok {
				x.resp = &r.Entries[a]
			} else if e.Reply != nil {
				x.reply = e.Reply
			}
			out = append(out, x)
		}
	}
	return out
}

func isAnswer(e *Entry) bool {
	return e.Kind == jsonrpc.KindResponse || e.Kind == jsonrpc.KindError
}
