package workspace_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/workspace"
)

// The test binary doubles as a helper process: with CTXD_WS_HELPER set it performs
// one WriteFile under conditions the test process itself must not adopt (another
// uid, a file size limit) and prints the catalog code of the outcome.
const helperEnv = "CTXD_WS_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

// helperMain: CTXD_WS_HELPER=write, CTXD_WS_ROOT, CTXD_WS_REL, CTXD_WS_SIZE (bytes of
// 'x' to write), CTXD_WS_FSIZE (optional RLIMIT_FSIZE). Prints "ok" or the code.
func helperMain() int {
	if lim := os.Getenv("CTXD_WS_FSIZE"); lim != "" {
		n, _ := strconv.ParseUint(lim, 10, 64)
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Println("setrlimit:", err)
			return 2
		}
	}
	size, _ := strconv.Atoi(os.Getenv("CTXD_WS_SIZE"))
	r, err := workspace.Open(os.Getenv("CTXD_WS_ROOT"))
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	defer r.Close()
	_, err = r.WriteFile(os.Getenv("CTXD_WS_REL"), []byte(strings.Repeat("x", size)))
	if err != nil {
		fmt.Printf("%s %v\n", catalog.ClassOf(err).Code, err)
		return 0
	}
	fmt.Println("ok")
	return 0
}

// publicCopyOfSelf copies the test binary into a directory every user may enter, so
// a helper can run as another uid (go test keeps its binary in a 0700 directory).
func publicCopyOfSelf(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	dst := filepath.Join(dir, "helper.test")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
