package inside

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/scrub"
	"github.com/contextd/contextd/workspace"
)

// writeFile is safe_write's I/O, run in tool mode inside the sandbox.
func writeFile(root *workspace.Root, op toolproto.Op, sc *scrub.Scrubber, fw *toolproto.Writer) error {
	if op.Content == nil {
		return fmt.Errorf("safe_write: no content: %w", catalog.ErrInternal)
	}
	data := []byte(*op.Content)
	// The secrets put back in data were read from the file op.Over names:
	// the write replaces that file or none.
	res, err := root.WriteFileOver(op.Rel, data, op.Over)
	if errors.Is(err, workspace.ErrNotThatFile) {
		return fmt.Errorf("safe_write: %s is no longer the file its placeholders were read from (a link, a directory or the file itself was changed since): nothing was written; read it again, then write: %w",
			op.Display, catalog.ErrPolicy)
	}
	if err != nil {
		return fmt.Errorf("safe_write: %w", err)
	}
	if err := fw.File(res.File); err != nil {
		return err
	}
	verb := "replaced"
	if res.Created {
		verb = "created"
	}
	lines := bytes.Count(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	msg := []byte(fmt.Sprintf("%s %s: %s, %s, mode %04o\n", verb, res.Path, plural(len(data), "byte"), plural(lines, "line"), res.Mode))
	return fw.Scrubbed(msg, sc.Find(msg))
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
