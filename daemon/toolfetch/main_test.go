package toolfetch

import (
	"os"
	"testing"

	"github.com/contextd/contextd/daemon/toolfetch/inside"
	"github.com/contextd/contextd/internal/victim"
	"github.com/contextd/contextd/ns"
)

// These tests install through the real sandbox: this test binary,
// re-executed by package ns as the sandbox's init, runs the fetch
// (inside.Main) under the tool_fetch profile in namespaces of its own, and
// the build under tool_build; the HTTP source goes through the real egress
// proxy. Run as root, they run again as an unprivileged user (the sandbox
// is for one), without a user manager: the runner has no scope then, and
// says so.
const (
	innerEnv = "CONTEXTD_TOOLFETCH_INNER"
	testUser = "ctxd-toolfetch"
)

func TestMain(m *testing.M) {
	ns.ReexecWith(ns.Hooks{Func: func(args []string) int {
		if len(args) == 1 && args[0] == inside.OpName {
			return inside.Main(os.Stdin, os.Stdout, os.Stderr)
		}
		return 70
	}})
	victim.Unprivileged{Name: "toolfetch tests", User: testUser, InnerEnv: innerEnv}.IfRoot()
	os.Exit(m.Run())
}
