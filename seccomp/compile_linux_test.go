//go:build cgo

package seccomp

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

func mustParse(t *testing.T, js string) *Profile {
	t.Helper()
	p, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nativeArchName(t *testing.T) string {
	t.Helper()
	a, err := libseccomp.GetNativeArch()
	if err != nil {
		t.Fatal(err)
	}
	for name, x := range archByName {
		if x == a {
			return name
		}
	}
	t.Fatalf("native arch %v not in archByName", a)
	return ""
}

func TestCompileAndExport(t *testing.T) {
	p := mustParse(t, validProfile)
	f, err := p.Compile()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	var bpf, pfc bytes.Buffer
	if err := f.ExportBPF(&bpf); err != nil {
		t.Fatal(err)
	}
	if bpf.Len() == 0 || bpf.Len()%8 != 0 {
		t.Fatalf("BPF program of %d bytes, want a non-empty multiple of 8 (struct sock_filter)", bpf.Len())
	}
	if err := f.ExportPFC(&pfc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"io_uring_setup"`, "ERRNO(38)", `"clone"`, "invalid architecture action", "KILL_PROCESS"} {
		if !strings.Contains(pfc.String(), want) {
			t.Errorf("PFC lacks %q:\n%s", want, pfc.String())
		}
	}
	// Only the native architecture is in the filter: aarch64 cannot occur
	// on x86_64 and the other way round.
	if n := strings.Count(pfc.String(), "# filter for arch"); n != 1 {
		t.Errorf("%d architectures in the filter, want 1:\n%s", n, pfc.String())
	}
	var bpf2 bytes.Buffer
	if err := p.ExportBPF(&bpf2); err != nil || !bytes.Equal(bpf.Bytes(), bpf2.Bytes()) {
		t.Errorf("Profile.ExportBPF differs from Filter.ExportBPF (err %v)", err)
	}
}

func TestCompileNames(t *testing.T) {
	native := nativeArchName(t)
	profile := func(def, act, names string) *Profile {
		return mustParse(t, `{"defaultAction": "`+def+`", "architectures": ["`+native+`"], "syscalls": [
			{"comment": "fine", "names": ["getppid"], "action": "SCMP_ACT_LOG"},
			{"comment": "the group", "names": [`+names+`], "action": "`+act+`"}]}`)
	}
	cases := []struct {
		name, def, act, names string
		err                   error
		skipped               string
		pfc                   string
	}{
		// A typo in a deny group of a deny-list would be a hole: refused.
		{"typo deny-list", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", `"ptrase"`, ErrUnknownSyscall, "", ""},
		// In an allowlist leaving it out only makes the filter stricter.
		{"typo allowlist", "SCMP_ACT_ERRNO", "SCMP_ACT_ALLOW", `"ptrase", "read"`, nil, "ptrase", ""},
		{"typo deny under deny default", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL_PROCESS", `"ptrase"`, nil, "ptrase", ""},
		// Not a system call of this architecture: nothing to filter.
		{"other arch", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", `"pciconfig_read", "ptrace"`, nil, "pciconfig_read", `"ptrace"`},
		// Newer than libseccomp: filtered by number.
		{"recent", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", `"open_tree_attr"`, nil, "", "467"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := profile(c.def, c.act, c.names).Compile()
			if c.err != nil {
				var ge *GroupError
				if !errors.Is(err, c.err) || !errors.As(err, &ge) || ge.Index != 1 || ge.Comment != "the group" {
					t.Fatalf("err %v, want %v in group 1", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Release()
			if got := strings.Join(f.Skipped(), ","); got != c.skipped {
				t.Errorf("skipped %q, want %q", got, c.skipped)
			}
			var pfc bytes.Buffer
			if err := f.ExportPFC(&pfc); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(pfc.String(), c.pfc) {
				t.Errorf("PFC lacks %q:\n%s", c.pfc, pfc.String())
			}
		})
	}
}

func TestCompileArchitectures(t *testing.T) {
	native := nativeArchName(t)
	foreign := "SCMP_ARCH_AARCH64"
	if native == foreign {
		foreign = "SCMP_ARCH_X86_64"
	}
	p := mustParse(t, `{"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["`+foreign+`"],
		"syscalls": [{"comment": "c", "names": ["ptrace"], "action": "SCMP_ACT_ERRNO"}]}`)
	if _, err := p.Compile(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("profile without the native architecture: err %v, want ErrUnsupported", err)
	}
	// An empty list means the native architecture.
	p.Architectures = nil
	f, err := p.Compile()
	if err != nil {
		t.Fatal(err)
	}
	f.Release()
	// Compile validates fields changed after Parse.
	p.Syscalls[0].Args = []Arg{{Index: 7, Op: OpEqual}}
	if _, err := p.Compile(); !errors.Is(err, ErrInvalidProfile) {
		t.Errorf("changed profile: err %v, want ErrInvalidProfile", err)
	}
}
