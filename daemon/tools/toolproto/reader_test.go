package toolproto

import (
	"bytes"
	"strings"
	"testing"

	"github.com/contextd/contextd/workspace"
)

// The daemon decodes whatever the sandbox sends: any bytes, cut anywhere,
// never panic, and frames a Writer wrote decode to what it wrote
// however the stream is cut.
func FuzzFrameReader(f *testing.F) {
	var good bytes.Buffer
	fw := NewWriter(&good)
	fw.Text([]byte("hello\n"))
	fw.Secret("github-pat", []byte("ghp_x"))
	fw.File(workspace.FileID{Dev: 2049, Ino: 1234, Path: "/w/app.env"})
	fw.Raw([]byte("raw middle\n"))
	fw.Text(nil)
	fw.Meta(Meta{})
	f.Add(good.Bytes(), uint8(3))
	f.Add([]byte{'T', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint8(1))
	f.Add([]byte{'S', 3, '{', '}', '}'}, uint8(2))
	f.Add([]byte{'X', 0}, uint8(1))
	f.Add([]byte{'F', 2, '{', '}'}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		step := int(cut%16) + 1
		decode := func(b []byte) (string, bool) {
			var out strings.Builder
			r := &Reader{
				OnText:   func(p []byte, _ bool) error { out.Write(p); return nil },
				OnSecret: func(s Secret) error { out.WriteString("<" + s.Rule + ">"); return nil },
				OnFile:   func(id workspace.FileID) error { out.WriteString("{" + id.Key() + "}"); return nil }}
			for len(b) > 0 {
				n := min(step, len(b))
				if _, err := r.Write(b[:n]); err != nil {
					return "", false
				}
				b = b[n:]
			}
			_, reported := r.Meta()
			return out.String(), r.Complete() && reported
		}
		decode(data)
		got, ok := decode(good.Bytes())
		if !ok || got != "hello\n<github-pat>{2049:1234:/w/app.env}raw middle\n" {
			t.Fatalf("well-formed frames cut every %d bytes decode to %q (complete %v)", step, got, ok)
		}
	})
}
