package toolproto

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/contextd/contextd/workspace"
)

// Reader is the daemon's side: an io.Writer that takes the tool's stdout in
// whatever pieces it arrives and calls its handlers frame by frame. Text is
// handed on as it arrives, piece by piece, never gathered: a large output
// crosses the daemon without being copied here. Only the small frames
// (secrets, gaps, the report) are collected whole. The bytes come from the
// sandbox, so anything malformed ends the stream with an error, never a
// panic.
type Reader struct {
	OnText   func(p []byte, scrubbed bool) error
	OnSecret func(s Secret) error
	OnGap    func(g Gap) error // nil: a gap is a malformed frame
	// OnFile takes a file frame; nil: file frames are checked and dropped.
	OnFile func(id workspace.FileID) error

	meta    Meta
	gotMeta bool

	hdr    []byte // a header being read
	inBody bool
	kind   byte
	left   uint64 // bytes of the current body still to come
	body   []byte // a small frame's body being gathered
	err    error
}

func (r *Reader) Write(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := len(p)
	for len(p) > 0 || (r.inBody && r.left == 0) {
		if !r.inBody {
			// The header: a type byte and a uvarint, at most 11 bytes.
			r.hdr = append(r.hdr, p[0])
			p = p[1:]
			if len(r.hdr) < 2 {
				continue
			}
			size, k := binary.Uvarint(r.hdr[1:])
			if k == 0 {
				if len(r.hdr) > 1+binary.MaxVarintLen64 {
					r.err = errBadFrame
					return 0, r.err
				}
				continue // header incomplete
			}
			if k < 0 || size > maxFrame {
				r.err = errBadFrame
				return 0, r.err
			}
			r.kind, r.left, r.inBody = r.hdr[0], size, true
			r.hdr, r.body = r.hdr[:0], r.body[:0]
			switch r.kind {
			case frameText, frameRaw:
			case frameSecret, frameMeta, frameGap, frameFile:
				if size > maxSmallFrame {
					r.err = errBadFrame
					return 0, r.err
				}
			default:
				r.err = fmt.Errorf("%w: type %q", errBadFrame, r.kind)
				return 0, r.err
			}
			continue
		}
		take := int(min(uint64(len(p)), r.left))
		chunk := p[:take]
		p = p[take:]
		r.left -= uint64(take)
		switch r.kind {
		case frameText, frameRaw:
			if len(chunk) > 0 {
				if err := r.OnText(chunk, r.kind == frameText); err != nil {
					r.err = err
					return 0, err
				}
			}
		default:
			r.body = append(r.body, chunk...)
		}
		if r.left == 0 {
			r.inBody = false
			if r.kind != frameText && r.kind != frameRaw {
				if err := r.handle(r.kind, r.body); err != nil {
					r.err = err
					return 0, err
				}
			}
		}
	}
	return n, nil
}

func (r *Reader) handle(kind byte, p []byte) error {
	switch kind {
	case frameSecret:
		var s Secret
		if err := json.Unmarshal(p, &s); err != nil || s.Rule == "" {
			return errBadFrame
		}
		return r.OnSecret(s)
	case frameGap:
		var g Gap
		if r.OnGap == nil || json.Unmarshal(p, &g) != nil || !g.Valid() {
			return errBadFrame
		}
		return r.OnGap(g)
	case frameFile:
		var id workspace.FileID
		if json.Unmarshal(p, &id) != nil || id.Key() == "" {
			return errBadFrame
		}
		if r.OnFile == nil {
			return nil
		}
		return r.OnFile(id)
	case frameMeta:
		if err := json.Unmarshal(p, &r.meta); err != nil {
			return errBadFrame
		}
		r.gotMeta = true
		return nil
	}
	return fmt.Errorf("%w: type %q", errBadFrame, kind)
}

// Complete reports whether the stream ended on a frame boundary.
func (r *Reader) Complete() bool { return r.err == nil && !r.inBody && len(r.hdr) == 0 }

// Meta returns the tool's report, and whether it came.
func (r *Reader) Meta() (Meta, bool) { return r.meta, r.gotMeta }
