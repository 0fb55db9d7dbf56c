package toolbench

import (
	"errors"
	"os"
)

func writeFile(p, s string) error { return os.WriteFile(p, []byte(s), 0o600) }

func asErr(err error, target any) bool { return errors.As(err, target) }
