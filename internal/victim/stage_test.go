package victim

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Output files are redirected into Out and copied back by Finish; every other flag
// is kept as it was.
func TestStageRedirectsOutputFiles(t *testing.T) {
	log := filepath.Join(t.TempDir(), "testlog.txt")
	in := []string{"-test.v=true", "-test.testlogfile=" + log, "-test.run=^TestX$", "-test.timeout=10m0s", "-test.paniconexit0"}
	s, err := Stage("victim-", in, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	redirected := "-test.testlogfile=" + filepath.Join(s.Out, "testlog.txt")
	want := []string{"-test.v=true", redirected, "-test.run=^TestX$", "-test.timeout=10m0s", "-test.paniconexit0"}
	if !slices.Equal(s.Args, want) {
		t.Fatalf("Args = %q, want %q", s.Args, want)
	}
	if fi, err := os.Stat(s.Bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("staged binary: %v %v", fi, err)
	}
	if err := os.WriteFile(filepath.Join(s.Out, "testlog.txt"), []byte("log"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Finish()
	if b, err := os.ReadFile(log); err != nil || string(b) != "log" {
		t.Fatalf("output file not copied back: %q %v", b, err)
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Fatalf("staging directory left behind: %v", err)
	}
}
