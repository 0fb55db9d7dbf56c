package gitguard

import (
	"os/exec"
	"testing"
)

// BenchmarkGuard is what the guard adds to every safe_bash and safe_write
// call (a fingerprint before, a check after, nothing changed), on a
// repository as git init makes it (13 sample hooks) with a submodule-like
// module and a worktree; BenchmarkExecTrue, beside it, is one fork and exec
// of /bin/true, the cheapest thing a call does (a call is about 40 ms).
func BenchmarkGuard(b *testing.B) {
	dir := repo(b)
	git(b, dir, "worktree", "add", "-q", "-b", "w", "wt")
	write(b, dir+"/.git/modules/m/HEAD", "ref: refs/heads/x\n", 0o644)
	write(b, dir+"/.git/modules/m/config", "[core]\n\tbare = false\n", 0o644)
	q := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Take(dir)
		if err != nil {
			b.Fatal(err)
		}
		if r := s.Check(q); len(r.Changes) != 0 {
			b.Fatal(r.Warnings())
		}
	}
}

func BenchmarkExecTrue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
