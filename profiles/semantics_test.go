package profiles_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/contextd/contextd/profiles"
	"github.com/contextd/contextd/seccomp"
)

// These tests read the profiles' rules as the format defines them (groups
// naming a call are ORed, args within a group ANDed) without the kernel; the
// victim tests check the kernel agrees.

type verdict struct {
	action seccomp.Action
	errno  uint
}

// decide is what p says for a call of name with args.
func decide(p *seccomp.Profile, name string, args [6]uint64) verdict {
	errno := func(e uint) uint {
		if e == 0 {
			e = p.DefaultErrnoRet
		}
		if e == 0 {
			e = seccomp.DefaultErrno
		}
		return e
	}
	for _, g := range p.Syscalls {
		named := false
		for _, n := range g.Names {
			named = named || n == name
		}
		if !named || !holds(g.Args, args) {
			continue
		}
		if g.Action == seccomp.ActErrno {
			return verdict{g.Action, errno(g.ErrnoRet)}
		}
		return verdict{g.Action, 0}
	}
	if p.DefaultAction == seccomp.ActErrno {
		return verdict{p.DefaultAction, errno(0)}
	}
	return verdict{p.DefaultAction, 0}
}

func holds(conds []seccomp.Arg, args [6]uint64) bool {
	for _, c := range conds {
		x := args[c.Index]
		var ok bool
		switch c.Op {
		case seccomp.OpEqual:
			ok = x == c.Value
		case seccomp.OpNotEqual:
			ok = x != c.Value
		case seccomp.OpLessThan:
			ok = x < c.Value
		case seccomp.OpLessEqual:
			ok = x <= c.Value
		case seccomp.OpGreaterThan:
			ok = x > c.Value
		case seccomp.OpGreaterEqual:
			ok = x >= c.Value
		case seccomp.OpMaskedEqual:
			ok = x&c.Value == c.ValueTwo
		}
		if !ok {
			return false
		}
	}
	return true
}

func embedded(t *testing.T, tool string) *seccomp.Profile {
	t.Helper()
	p, err := profiles.Embedded(tool)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var personalityAllowed = []uint64{0, 0x8, 0x20000, 0x20008, 0xffffffff}

// TestPersonalityCover proves, over all 2^64 values, that safe_bash's
// personality groups deny exactly the values other than Docker's five.
// Values above 32 bits: one GT 0xffffffff group. Below: the groups are
// masks on the low 32 bits; a depth-first walk over the bits, pruned where
// a group already matches, finds every value no group matches.
func TestPersonalityCover(t *testing.T) {
	p := embedded(t, "safe_bash")
	type cube struct{ mask, value uint64 }
	var cubes []cube
	high := false
	for i, g := range p.Syscalls {
		if g.Names[0] != "personality" {
			continue
		}
		if len(g.Names) != 1 || len(g.Args) != 1 || g.Args[0].Index != 0 || g.Action != seccomp.ActErrno {
			t.Fatalf("syscalls[%d]: the check understands only single-condition EPERM groups on argument 0", i)
		}
		a := g.Args[0]
		switch {
		case a.Op == seccomp.OpGreaterThan && a.Value == 0xffffffff:
			high = true
		case a.Op == seccomp.OpMaskedEqual && a.Value <= 0xffffffff:
			cubes = append(cubes, cube{a.Value, a.ValueTwo})
		default:
			t.Fatalf("syscalls[%d]: unexpected condition %+v", i, a)
		}
	}
	if !high {
		t.Fatal("no group denies values above 0xffffffff")
	}
	var free []uint64
	var walk func(depth uint, value, known uint64)
	walk = func(depth uint, value, known uint64) {
		live := false
		for _, c := range cubes {
			if (value^c.value)&c.mask&known != 0 {
				continue // contradicted
			}
			if c.mask&^known == 0 {
				return // matched: the whole subtree is denied
			}
			live = true
		}
		if !live && depth < 32 {
			t.Fatalf("2^%d values with prefix %#x (%d bits) are allowed", 32-depth, value, depth)
		}
		if depth == 32 {
			free = append(free, value)
			return
		}
		walk(depth+1, value, known|1<<depth)
		walk(depth+1, value|1<<depth, known|1<<depth)
	}
	walk(0, 0, 0)
	sort.Slice(free, func(i, j int) bool { return free[i] < free[j] })
	if fmt.Sprint(free) != fmt.Sprint(personalityAllowed) {
		t.Fatalf("personality values left allowed: %#x, want %#x", free, personalityAllowed)
	}
	// And the generic reading agrees on samples.
	for _, v := range append(personalitySamples(), personalityAllowed...) {
		allowed := decide(p, "personality", [6]uint64{v}).action == seccomp.ActAllow
		if allowed != isAllowedPersonality(v) {
			t.Errorf("personality(%#x): allowed=%v", v, allowed)
		}
	}
}

func isAllowedPersonality(v uint64) bool {
	for _, a := range personalityAllowed {
		if v == a {
			return true
		}
	}
	return false
}

// personalitySamples: every single bit, every pair of the low 32 bits, the
// all-ones value with one bit cleared, boundaries, and random values.
func personalitySamples() []uint64 {
	var s []uint64
	for i := 0; i < 64; i++ {
		s = append(s, 1<<i, 0xffffffff&^(1<<(i%32)), 0xffffffff|1<<i)
		for j := i + 1; j < 32 && i < 32; j++ {
			s = append(s, 1<<i|1<<j)
		}
	}
	s = append(s, 1, 7, 9, 0x1ffff, 0x20001, 0x20007, 0x20009, 0x20010, 0x0400000, 0x0040000, 0xfffffffe, 1<<64-1, 1<<32)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		s = append(s, r.Uint64(), r.Uint64()&0xffffffff, r.Uint64()&0x3ffff)
	}
	return s
}

// Socket families: exactly AF_UNIX, AF_INET, AF_INET6; raw and packet
// types never.
func TestSocketRules(t *testing.T) {
	p := embedded(t, "safe_bash")
	for _, name := range []string{"socket", "socketpair"} {
		for _, fam := range socketFamilies() {
			want := fam == 1 || fam == 2 || fam == 10
			got := decide(p, name, [6]uint64{fam, 1}).action == seccomp.ActAllow
			if got != want {
				t.Errorf("%s(%#x, SOCK_STREAM): allowed=%v, want %v", name, fam, got, want)
			}
		}
		for _, typ := range []uint64{1, 2, 3, 5, 6, 10, 3 | 0x80000, 3 | 0x800, 10 | 0x80800, 2 | 0x80000} {
			want := typ&0xf != 3 && typ&0xf != 10
			for _, fam := range []uint64{1, 2, 10} {
				if got := decide(p, name, [6]uint64{fam, typ}).action == seccomp.ActAllow; got != want {
					t.Errorf("%s(%d, %#x): allowed=%v, want %v", name, fam, typ, got, want)
				}
			}
		}
	}
}

func socketFamilies() []uint64 {
	var s []uint64
	for f := uint64(0); f < 300; f++ {
		s = append(s, f)
	}
	return append(s, 0x7fffffff, 0x80000000, 0xffffffff, 1<<32|1, 1<<32|2, 1<<32|10, 1<<63|1, 1<<64-1)
}

// Clone: namespace flags refused one by one, everything else allowed.
func TestCloneRules(t *testing.T) {
	p := embedded(t, "safe_bash")
	const sigchld = 17
	ordinary := []uint64{
		sigchld,                  // fork
		0x4000 | 0x100 | sigchld, // vfork: CLONE_VFORK|CLONE_VM
		0x3d0f00,                 // glibc pthread_create
		0x50f00,                  // Go runtime threads (non-cgo)
	}
	for _, f := range ordinary {
		if d := decide(p, "clone", [6]uint64{f}); d.action != seccomp.ActAllow {
			t.Errorf("clone(%#x): %v, want allowed", f, d)
		}
	}
	for _, ns := range []uint64{0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000} {
		for _, f := range ordinary {
			if d := decide(p, "clone", [6]uint64{f | ns}); d != (verdict{seccomp.ActErrno, 1}) {
				t.Errorf("clone(%#x): %v, want EPERM", f|ns, d)
			}
		}
	}
	// The allowlists: threads only.
	for _, tool := range []string{"safe_read", "safe_write"} {
		q := embedded(t, tool)
		if d := decide(q, "clone", [6]uint64{0x3d0f00}); d.action != seccomp.ActAllow {
			t.Errorf("%s: thread clone: %v", tool, d)
		}
		for _, f := range []uint64{sigchld, 0x4000 | 0x100 | sigchld, 0x3d0f00 | 0x10000000, 0x3d0f00 | 0x20000} {
			if d := decide(q, "clone", [6]uint64{f}); d.action == seccomp.ActAllow {
				t.Errorf("%s: clone(%#x) allowed", tool, f)
			}
		}
		if d := decide(q, "clone3", [6]uint64{}); d != (verdict{seccomp.ActErrno, 38}) {
			t.Errorf("%s: clone3: %v, want ENOSYS", tool, d)
		}
	}
}
