package inside

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/toolfetch/toolsrc"
)

// OpName is the tool mode operation (argv[1] of the sandbox's function)
// that runs Main.
const OpName = "tool_fetch"

// Main is the fetch in its sandbox: it reads one Op on stdin, fetches, and
// writes the Result as JSON on stdout, or one catalog error as JSON on
// stderr; the exit status is the error's.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	err := run(context.Background(), stdin, stdout)
	if err == nil {
		return 0
	}
	b, _ := json.Marshal(catalog.ToDetail(err))
	stderr.Write(append(b, '\n'))
	return catalog.ExitCode(err)
}

func run(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	var op toolsrc.Op
	if err := json.NewDecoder(io.LimitReader(stdin, 1<<20)).Decode(&op); err != nil {
		return fmt.Errorf("tool fetch: decode operation: %v: %w", err, catalog.ErrInternal)
	}
	os.Clearenv()
	for _, kv := range op.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if err := os.Setenv(k, v); err != nil {
				return fmt.Errorf("tool fetch: environment: %v: %w", err, catalog.ErrInternal)
			}
		}
	}
	res, err := Fetch(ctx, op)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return fmt.Errorf("tool fetch: send result: %v: %w", err, catalog.ErrIO)
	}
	return nil
}
