//go:build cgo

package seccomp

import (
	"fmt"
	"io"
	"os"
	"sort"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

// Filter is a compiled profile, ready to load. Release it when done.
type Filter struct {
	f       *libseccomp.ScmpFilter
	skipped []string
}

// minAPI is the libseccomp API level Compile requires: 2 brings TSYNC (and
// the seccomp(2) syscall), 3 the KILL_PROCESS action (used for calls through
// an architecture the filter does not cover) and LOG.
const minAPI = 3

// compat lists the architectures whose system calls a process on the key
// architecture can make (the kernel's compat ABIs). Any other listed
// architecture cannot occur on this machine and is left out of the filter.
var compat = map[libseccomp.ScmpArch][]libseccomp.ScmpArch{
	libseccomp.ArchAMD64: {libseccomp.ArchX86, libseccomp.ArchX32},
	libseccomp.ArchARM64: {libseccomp.ArchARM},
}

var archByName = map[string]libseccomp.ScmpArch{
	"SCMP_ARCH_X86": libseccomp.ArchX86, "SCMP_ARCH_X86_64": libseccomp.ArchAMD64, "SCMP_ARCH_X32": libseccomp.ArchX32,
	"SCMP_ARCH_ARM": libseccomp.ArchARM, "SCMP_ARCH_AARCH64": libseccomp.ArchARM64,
	"SCMP_ARCH_MIPS": libseccomp.ArchMIPS, "SCMP_ARCH_MIPS64": libseccomp.ArchMIPS64, "SCMP_ARCH_MIPS64N32": libseccomp.ArchMIPS64N32,
	"SCMP_ARCH_MIPSEL": libseccomp.ArchMIPSEL, "SCMP_ARCH_MIPSEL64": libseccomp.ArchMIPSEL64, "SCMP_ARCH_MIPSEL64N32": libseccomp.ArchMIPSEL64N32,
	"SCMP_ARCH_PPC": libseccomp.ArchPPC, "SCMP_ARCH_PPC64": libseccomp.ArchPPC64, "SCMP_ARCH_PPC64LE": libseccomp.ArchPPC64LE,
	"SCMP_ARCH_S390": libseccomp.ArchS390, "SCMP_ARCH_S390X": libseccomp.ArchS390X,
	"SCMP_ARCH_PARISC": libseccomp.ArchPARISC, "SCMP_ARCH_PARISC64": libseccomp.ArchPARISC64,
	"SCMP_ARCH_RISCV64": libseccomp.ArchRISCV64,
}

var opByName = map[Operator]libseccomp.ScmpCompareOp{
	OpNotEqual: libseccomp.CompareNotEqual, OpLessThan: libseccomp.CompareLess, OpLessEqual: libseccomp.CompareLessOrEqual,
	OpEqual: libseccomp.CompareEqual, OpGreaterEqual: libseccomp.CompareGreaterEqual, OpGreaterThan: libseccomp.CompareGreater,
	OpMaskedEqual: libseccomp.CompareMaskedEqual,
}

func scmpAction(a Action, errno uint) libseccomp.ScmpAction {
	switch canonical(a) {
	case ActAllow:
		return libseccomp.ActAllow
	case ActErrno:
		return libseccomp.ActErrno.SetReturnCode(int16(errno))
	case ActKillProcess:
		return libseccomp.ActKillProcess
	case ActKillThread:
		return libseccomp.ActKillThread
	case ActTrap:
		return libseccomp.ActTrap
	case ActLog:
		return libseccomp.ActLog
	}
	panic("seccomp: unvalidated action " + string(a))
}

// Compile validates the profile and builds the filter for this machine.
//
// Architectures: the filter covers the native architecture and the listed
// ones the kernel can run here (i386 and x32 on x86_64, arm on aarch64);
// listed architectures that cannot occur on this machine are left out. If
// the list is not empty it must contain the native architecture
// (ErrUnsupported otherwise: the profile was not written for this machine).
// A call made through an architecture that is not in the filter (for
// example int 0x80 when only SCMP_ARCH_X86_64 is listed) kills the process.
//
// System call names are resolved with libseccomp:
//   - a name libseccomp knows for an architecture in the filter gets its rule;
//   - a name that exists only on other architectures (pciconfig_read on
//     x86_64) is left out: no program can make that call here. Skipped lists
//     it;
//   - a name newer than libseccomp's table but in this package's table of
//     recent system calls (listmount, mseal, open_tree_attr, ...) gets its
//     rule by number, when the filter has only the native architecture;
//   - any other name (a typo, or a call newer than both tables) is left out
//     only where that cannot weaken the filter: when the default action
//     stops calls, or the group's action lets them run (the call then meets
//     the stricter default). Where leaving it out would let a call run that
//     the profile means to stop (a deny group under an allowing default),
//     Compile fails with ErrUnknownSyscall. Docker always ignores unknown
//     names; for a deny-list that would turn a typo into a hole.
func (p *Profile) Compile() (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	api, err := libseccomp.GetAPI()
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp_api_get: %v", ErrUnsupported, err)
	}
	if api < minAPI {
		maj, min, mic := libseccomp.GetLibraryVersion()
		return nil, fmt.Errorf("%w: libseccomp %d.%d.%d with this kernel offers API level %d; level %d (thread sync, kill-process) is required",
			ErrUnsupported, maj, min, mic, api, minAPI)
	}
	native, err := libseccomp.GetNativeArch()
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp_arch_native: %v", ErrUnsupported, err)
	}
	var extra []libseccomp.ScmpArch // compat architectures to add
	if len(p.Architectures) > 0 {
		hasNative := false
		for _, name := range p.Architectures {
			a := archByName[name]
			switch {
			case a == native:
				hasNative = true
			case containsArch(compat[native], a):
				extra = append(extra, a)
			}
		}
		if !hasNative {
			return nil, fmt.Errorf("%w: the profile lists architectures %v but not this machine's (%s)", ErrUnsupported, p.Architectures, native)
		}
	}

	def := p.defaultOutcome()
	f, err := libseccomp.NewFilter(scmpAction(def.action, def.errno))
	if err != nil {
		return nil, fmt.Errorf("%w: seccomp_init: %v", ErrUnsupported, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Release()
		}
	}()
	// NewFilter asks for TSYNC but ignores ENOTSUP; API level >= 2 (checked
	// above) guarantees the attribute was accepted.
	if err := f.SetNoNewPrivsBit(true); err != nil {
		return nil, fmt.Errorf("%w: seccomp_attr_set(NNP): %v", ErrUnsupported, err)
	}
	if err := f.SetBadArchAction(libseccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("%w: seccomp_attr_set(ACT_BADARCH): %v", ErrUnsupported, err)
	}
	for _, a := range extra {
		if err := f.AddArch(a); err != nil {
			return nil, fmt.Errorf("%w: seccomp_arch_add(%s): %v", ErrUnsupported, a, err)
		}
	}

	out := &Filter{f: f}
	for i := range p.Syscalls {
		g := &p.Syscalls[i]
		if err := p.addGroup(out, g, extra, def); err != nil {
			return nil, &GroupError{Index: i, Comment: g.Comment, Err: err}
		}
	}
	sort.Strings(out.skipped)
	ok = true
	return out, nil
}

func (p *Profile) addGroup(out *Filter, g *Syscall, extra []libseccomp.ScmpArch, def outcome) error {
	o := p.groupOutcome(g)
	act := scmpAction(o.action, o.errno)
	conds := make([]libseccomp.ScmpCondition, 0, len(g.Args))
	for _, a := range g.Args {
		c, err := libseccomp.MakeCondition(a.Index, opByName[a.Op], a.Value, a.ValueTwo)
		if err != nil {
			return fmt.Errorf("%w: args index %d: %v", ErrInvalidProfile, a.Index, err)
		}
		conds = append(conds, c)
	}
	for _, name := range g.Names {
		nr, err := libseccomp.GetSyscallFromName(name)
		switch {
		case err != nil:
			n, inTable := recentSyscalls[name]
			switch {
			case inTable && len(extra) == 0:
				nr = libseccomp.ScmpSyscall(n)
			case inTable:
				return fmt.Errorf("%w: %q is too new for libseccomp %s: it can be filtered by number only when the profile lists no compat architecture",
					ErrUnknownSyscall, name, libVersion())
			case !denies(def.action) && denies(o.action):
				return fmt.Errorf("%w: %q: libseccomp %s does not know it; leaving it out would let it run (fix the name, or update libseccomp)",
					ErrUnknownSyscall, name, libVersion())
			default:
				out.skipped = append(out.skipped, name)
				continue
			}
		case nr < 0 && !existsOn(name, extra):
			// Known to libseccomp, but not a system call of any architecture
			// in the filter: nothing to filter.
			out.skipped = append(out.skipped, name)
			continue
		}
		if len(conds) == 0 {
			err = out.f.AddRule(nr, act)
		} else {
			err = out.f.AddRuleConditional(nr, act, conds)
		}
		if err != nil {
			return fmt.Errorf("%w: seccomp_rule_add(%s): %v", ErrInvalidProfile, name, err)
		}
	}
	return nil
}

func existsOn(name string, arches []libseccomp.ScmpArch) bool {
	for _, a := range arches {
		if nr, err := libseccomp.GetSyscallFromNameByArch(name, a); err == nil && nr >= 0 {
			return true
		}
	}
	return false
}

func containsArch(list []libseccomp.ScmpArch, a libseccomp.ScmpArch) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

func libVersion() string {
	maj, min, mic := libseccomp.GetLibraryVersion()
	return fmt.Sprintf("%d.%d.%d", maj, min, mic)
}

// Skipped lists the names the filter leaves out, sorted: calls that do not
// exist on this machine's architectures, and unknown names whose omission
// cannot weaken the filter (see Compile).
func (f *Filter) Skipped() []string { return append([]string(nil), f.skipped...) }

// Load installs the filter in the calling process: it sets no_new_privs and
// loads the filter with SECCOMP_FILTER_FLAG_TSYNC, so every thread of the
// process is filtered, and everything it executes from then on. It fails
// (ErrLoad) if any thread cannot be synchronized; no filter is installed
// then, but no_new_privs may already be set. The filter cannot be removed:
// after an error the caller must not run the sandboxed program (fail closed).
func (f *Filter) Load() error {
	if err := f.f.Load(); err != nil {
		return fmt.Errorf("%w: seccomp_load: %v", ErrLoad, err)
	}
	return nil
}

// Release frees the filter's memory. A loaded filter stays in force.
func (f *Filter) Release() { f.f.Release() }

// ExportBPF writes the filter's BPF program (struct sock_filter array, host
// byte order) to w.
func (f *Filter) ExportBPF(w io.Writer) error {
	return export(w, "seccomp_export_bpf", f.f.ExportBPF)
}

// ExportPFC writes libseccomp's human-readable pseudo-code of the filter to w.
func (f *Filter) ExportPFC(w io.Writer) error {
	return export(w, "seccomp_export_pfc", f.f.ExportPFC)
}

// export runs an exporter that needs an *os.File, copying through a pipe.
func export(w io.Writer, call string, fn func(*os.File) error) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("%s: pipe2: %w", call, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, r)
		r.Close()
		done <- err
	}()
	err = fn(pw)
	pw.Close()
	if cerr := <-done; err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", call, err)
	}
	return nil
}

// Load compiles the profile and installs it in the calling process (see
// Filter.Load): the whole process, all threads, no_new_privs set. Call it
// last before execve; from then on only what the profile allows works.
func (p *Profile) Load() error {
	f, err := p.Compile()
	if err != nil {
		return err
	}
	defer f.Release()
	return f.Load()
}

// ExportBPF compiles the profile and writes its BPF program to w.
func (p *Profile) ExportBPF(w io.Writer) error {
	f, err := p.Compile()
	if err != nil {
		return err
	}
	defer f.Release()
	return f.ExportBPF(w)
}
