// Package seccomp parses contextd's JSON seccomp profiles (a subset of the Docker/OCI format) and compiles and loads them with libseccomp.
package seccomp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error classes. Every error returned by this package wraps exactly one of
// them (errors.Is).
var (
	// ErrInvalidProfile: the JSON is malformed or breaks a rule of the format
	// (see Parse). The message says which group and field.
	ErrInvalidProfile = errors.New("invalid seccomp profile")
	// ErrUnknownSyscall: a group names a system call that libseccomp cannot
	// resolve on this machine, in a group where leaving it out would weaken
	// the filter (see Compile).
	ErrUnknownSyscall = errors.New("unknown system call in seccomp profile")
	// ErrUnsupported: this machine (kernel, libseccomp, build) cannot apply
	// the profile as written; nothing was loaded.
	ErrUnsupported = errors.New("seccomp profile cannot be applied here")
	// ErrLoad: the kernel refused the filter; the caller must not go on to run
	// anything (fail closed).
	ErrLoad = errors.New("loading seccomp filter failed")
)

// Action is what the filter does with a matching call, in the Docker/OCI
// spelling.
type Action string

// The actions a profile may use. SCMP_ACT_TRACE and SCMP_ACT_NOTIFY are not
// supported: they hand decisions to another process.
const (
	ActAllow       Action = "SCMP_ACT_ALLOW"        // run the call
	ActErrno       Action = "SCMP_ACT_ERRNO"        // fail it with errnoRet (see Syscall.ErrnoRet)
	ActKillProcess Action = "SCMP_ACT_KILL_PROCESS" // kill the whole process (SIGSYS)
	ActKillThread  Action = "SCMP_ACT_KILL_THREAD"  // kill the calling thread
	ActKill        Action = "SCMP_ACT_KILL"         // old name of ActKillThread
	ActTrap        Action = "SCMP_ACT_TRAP"         // deliver SIGSYS to the thread
	ActLog         Action = "SCMP_ACT_LOG"          // run the call and log it (audit)
)

// Operator compares one system call argument, in the Docker/OCI spelling.
type Operator string

// The comparisons. All compare the full 64-bit register value. For
// OpMaskedEqual, Arg.Value is the mask and Arg.ValueTwo the value the masked
// argument must equal: (arg & Value) == ValueTwo, as in Docker's profile.
const (
	OpNotEqual     Operator = "SCMP_CMP_NE"
	OpLessThan     Operator = "SCMP_CMP_LT"
	OpLessEqual    Operator = "SCMP_CMP_LE"
	OpEqual        Operator = "SCMP_CMP_EQ"
	OpGreaterEqual Operator = "SCMP_CMP_GE"
	OpGreaterThan  Operator = "SCMP_CMP_GT"
	OpMaskedEqual  Operator = "SCMP_CMP_MASKED_EQ"
)

// Errno values the format refers to.
const (
	// DefaultErrno is the errno of an SCMP_ACT_ERRNO group that sets no
	// errnoRet when the profile sets no defaultErrnoRet: EPERM.
	DefaultErrno = 1
	// MaxErrno is the largest errno the kernel can return (MAX_ERRNO).
	MaxErrno = 4095
	// MaxArgIndex is the index of a system call's last argument.
	MaxArgIndex = 5
)

// architectures are the names a profile may list, in libseccomp's spelling.
var architectures = []string{
	"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32",
	"SCMP_ARCH_ARM", "SCMP_ARCH_AARCH64",
	"SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64", "SCMP_ARCH_MIPS64N32",
	"SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32",
	"SCMP_ARCH_PPC", "SCMP_ARCH_PPC64", "SCMP_ARCH_PPC64LE",
	"SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64",
	"SCMP_ARCH_RISCV64",
}

// Profile is a parsed profile. The JSON tags give the on-disk format, so
// json.Marshal of a valid Profile is a valid profile again.
//
// A program changing the fields after Parse gets them validated again by
// Compile.
type Profile struct {
	// Comment says what the profile is for. Optional.
	Comment string `json:"comment,omitempty"`
	// DefaultAction applies to every call no group matches. Required.
	DefaultAction Action `json:"defaultAction"`
	// DefaultErrnoRet is the errno of DefaultAction when that is
	// SCMP_ACT_ERRNO, and of every SCMP_ACT_ERRNO group without its own
	// errnoRet. 0 means unset (EPERM).
	DefaultErrnoRet uint `json:"defaultErrnoRet,omitempty"`
	// Architectures the profile is written for. The filter always covers
	// the machine's native architecture, which must be listed when the list
	// is not empty (see Compile). Listing a compat ABI (SCMP_ARCH_X86 or
	// SCMP_ARCH_X32 on x86_64) opens it: calls through it are then filtered
	// by name only, and argument conditions on socket(2) and friends do not
	// apply to the i386 multiplexer socketcall(2) (libseccomp 2.5.4 filters
	// only the direct calls). Leave them out to have such calls kill the
	// process.
	Architectures []string `json:"architectures,omitempty"`
	// Syscalls are the rule groups.
	Syscalls []Syscall `json:"syscalls"`
}

// MarshalJSON writes the profile in its file format ("syscalls" is an empty
// array rather than null when there are no groups).
func (p Profile) MarshalJSON() ([]byte, error) {
	type plain Profile // without this method
	q := plain(p)
	if q.Syscalls == nil {
		q.Syscalls = []Syscall{}
	}
	return json.Marshal(q)
}

// Syscall is one rule group: Action applies to each of Names when all of
// Args hold (they are ANDed; an empty Args matches every call).
type Syscall struct {
	// Comment says why the group exists. Required: profiles are reviewed.
	Comment string `json:"comment"`
	// Names of the system calls, as libseccomp spells them.
	Names []string `json:"names"`
	// Action when the group matches.
	Action Action `json:"action"`
	// ErrnoRet is the errno returned by SCMP_ACT_ERRNO, 1..MaxErrno; 0 means
	// unset: the profile's DefaultErrnoRet, else EPERM. Only valid with
	// SCMP_ACT_ERRNO.
	ErrnoRet uint `json:"errnoRet,omitempty"`
	// Args are conditions on the call's arguments, all of which must hold.
	Args []Arg `json:"args,omitempty"`
}

// Arg is a condition on argument Index (0..MaxArgIndex) of a call.
type Arg struct {
	Index    uint     `json:"index"`
	Value    uint64   `json:"value"`
	ValueTwo uint64   `json:"valueTwo,omitempty"`
	Op       Operator `json:"op"`
}

// GroupError locates a problem in one syscall group. It wraps the error
// class (errors.Is(err, ErrInvalidProfile) and so on).
type GroupError struct {
	Index   int    // position in "syscalls"
	Comment string // the group's comment, when it could be read
	Err     error
}

func (e *GroupError) Error() string {
	c := ""
	if e.Comment != "" {
		c = fmt.Sprintf(" (%q)", e.Comment)
	}
	return fmt.Sprintf("syscalls[%d]%s: %v", e.Index, c, e.Err)
}

func (e *GroupError) Unwrap() error { return e.Err }

// Parse parses and validates a profile. It is strict, so that what a
// reviewer reads is what the filter does:
//
//   - only the fields of the Profile, Syscall and Arg types, spelled exactly
//     so; no duplicate keys, no null, nothing after the top-level object;
//   - known actions, operators and architectures only; errnoRet 1..MaxErrno
//     and only on SCMP_ACT_ERRNO groups;
//   - every group has a non-empty comment and at least one name; names are
//     lowercase identifiers, not repeated in a group;
//   - args: index 0..MaxArgIndex, each index at most once per group (a
//     libseccomp limit), valueTwo only with SCMP_CMP_MASKED_EQ, and a masked
//     comparison that can match;
//   - a group whose action equals the default action is refused (it would do
//     nothing);
//   - a system call named by a group without args may not appear in another
//     group (libseccomp would silently drop the conditional rules), and all
//     groups naming the same call must have the same action and errno (their
//     conditions are ORed; with different actions the outcome of a call
//     matching two groups would depend on libseccomp's rule order).
//
// Names are not checked against the kernel here; see Compile.
func Parse(data []byte) (*Profile, error) {
	p, err := decode(data)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks p against the rules listed at Parse.
func (p *Profile) Validate() error {
	if !validAction(p.DefaultAction) {
		return fmt.Errorf("%w: defaultAction: %s", ErrInvalidProfile, actionProblem(p.DefaultAction))
	}
	if p.DefaultErrnoRet > MaxErrno {
		return fmt.Errorf("%w: defaultErrnoRet %d: not in 1..%d", ErrInvalidProfile, p.DefaultErrnoRet, MaxErrno)
	}
	seenArch := map[string]bool{}
	for _, a := range p.Architectures {
		if !knownArch(a) {
			return fmt.Errorf("%w: architectures: unknown architecture %q", ErrInvalidProfile, a)
		}
		if seenArch[a] {
			return fmt.Errorf("%w: architectures: %q listed twice", ErrInvalidProfile, a)
		}
		seenArch[a] = true
	}
	def := p.defaultOutcome()
	type use struct {
		group   int
		outcome outcome
		hasArgs bool
	}
	uses := map[string]use{}
	for i := range p.Syscalls {
		g := &p.Syscalls[i]
		if err := p.validateGroup(g, def); err != nil {
			return &GroupError{Index: i, Comment: g.Comment, Err: fmt.Errorf("%w: %w", ErrInvalidProfile, err)}
		}
		out := p.groupOutcome(g)
		for _, n := range g.Names {
			prev, ok := uses[n]
			if !ok {
				uses[n] = use{group: i, outcome: out, hasArgs: len(g.Args) > 0}
				continue
			}
			var err error
			switch {
			case !prev.hasArgs || len(g.Args) == 0:
				err = fmt.Errorf("%q is also in syscalls[%d] and one of the two groups has no args: "+
					"an unconditional rule overrides every other rule for the call; merge the groups", n, prev.group)
			case prev.outcome != out:
				err = fmt.Errorf("%q is also in syscalls[%d] with a different action (%s vs %s): "+
					"a call matching both would get either; use one action per system call", n, prev.group, prev.outcome, out)
			}
			if err != nil {
				return &GroupError{Index: i, Comment: g.Comment, Err: fmt.Errorf("%w: %w", ErrInvalidProfile, err)}
			}
		}
	}
	return nil
}

func (p *Profile) validateGroup(g *Syscall, def outcome) error {
	if strings.TrimSpace(g.Comment) == "" {
		return errors.New("comment is empty: every group says why it exists")
	}
	if len(g.Names) == 0 {
		return errors.New("names is empty")
	}
	seen := map[string]bool{}
	for _, n := range g.Names {
		if !validName(n) {
			return fmt.Errorf("names: %q is not a system call name", n)
		}
		if seen[n] {
			return fmt.Errorf("names: %q listed twice", n)
		}
		seen[n] = true
	}
	if !validAction(g.Action) {
		return fmt.Errorf("action: %s", actionProblem(g.Action))
	}
	if g.ErrnoRet != 0 && g.Action != ActErrno {
		return fmt.Errorf("errnoRet is set but action is %s, not %s", g.Action, ActErrno)
	}
	if g.ErrnoRet > MaxErrno {
		return fmt.Errorf("errnoRet %d: not in 1..%d", g.ErrnoRet, MaxErrno)
	}
	if out := p.groupOutcome(g); out == def {
		return fmt.Errorf("action %s is the default action: the group would do nothing", out)
	}
	if len(g.Args) > MaxArgIndex+1 {
		return fmt.Errorf("args: %d conditions, a system call has %d arguments", len(g.Args), MaxArgIndex+1)
	}
	var idx [MaxArgIndex + 1]bool
	for j, a := range g.Args {
		if a.Index > MaxArgIndex {
			return fmt.Errorf("args[%d]: index %d: a system call has arguments 0..%d", j, a.Index, MaxArgIndex)
		}
		if idx[a.Index] {
			return fmt.Errorf("args[%d]: index %d compared twice in one group (libseccomp allows one comparison per argument and rule; use several groups)", j, a.Index)
		}
		idx[a.Index] = true
		switch a.Op {
		case OpNotEqual, OpLessThan, OpLessEqual, OpEqual, OpGreaterEqual, OpGreaterThan:
			if a.ValueTwo != 0 {
				return fmt.Errorf("args[%d]: valueTwo is only used by %s", j, OpMaskedEqual)
			}
		case OpMaskedEqual:
			if a.ValueTwo&^a.Value != 0 {
				return fmt.Errorf("args[%d]: valueTwo %#x has bits outside the mask %#x: the condition can never hold", j, a.ValueTwo, a.Value)
			}
		default:
			return fmt.Errorf("args[%d]: unknown op %q", j, a.Op)
		}
	}
	return nil
}

// outcome is an action with its errno resolved, for comparisons.
type outcome struct {
	action Action
	errno  uint
}

func (o outcome) String() string {
	if o.action == ActErrno {
		return fmt.Sprintf("%s(%d)", o.action, o.errno)
	}
	return string(o.action)
}

func canonical(a Action) Action {
	if a == ActKill {
		return ActKillThread
	}
	return a
}

func (p *Profile) defaultOutcome() outcome {
	o := outcome{action: canonical(p.DefaultAction)}
	if o.action == ActErrno {
		o.errno = p.errnoOr(0)
	}
	return o
}

func (p *Profile) groupOutcome(g *Syscall) outcome {
	o := outcome{action: canonical(g.Action)}
	if o.action == ActErrno {
		o.errno = p.errnoOr(g.ErrnoRet)
	}
	return o
}

// errnoOr resolves an errnoRet: its own value, else the profile's
// defaultErrnoRet, else EPERM.
func (p *Profile) errnoOr(e uint) uint {
	switch {
	case e != 0:
		return e
	case p.DefaultErrnoRet != 0:
		return p.DefaultErrnoRet
	}
	return DefaultErrno
}

// denies reports whether the action stops the call from running.
func denies(a Action) bool {
	switch canonical(a) {
	case ActAllow, ActLog:
		return false
	}
	return true
}

func validAction(a Action) bool {
	switch a {
	case ActAllow, ActErrno, ActKillProcess, ActKillThread, ActKill, ActTrap, ActLog:
		return true
	}
	return false
}

func actionProblem(a Action) string {
	switch a {
	case "":
		return "missing"
	case "SCMP_ACT_TRACE", "SCMP_ACT_NOTIFY":
		return fmt.Sprintf("%s is not supported (it hands the decision to another process)", a)
	}
	return fmt.Sprintf("unknown action %q", a)
}

func knownArch(a string) bool {
	for _, k := range architectures {
		if a == k {
			return true
		}
	}
	return false
}

// validName accepts what system call names look like: a lowercase
// identifier (e.g. "_llseek", "io_uring_setup", "clock_gettime64").
func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
