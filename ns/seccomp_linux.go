package ns

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/contextd/contextd/seccomp"
)

// loadable is a compiled profile, ready to be installed in this process.
type loadable interface{ Load() error }

// parseSeccomp parses and compiles the profile during setup, before the
// release: a bad profile is then a setup error reported before anything
// runs, and all that is left for the last step is the kernel load itself.
// The init does this only when the daemon could not compile the profile
// (see precompile).
func parseSeccomp(data []byte) (loadable, error) {
	p, err := seccomp.Parse(data)
	if err != nil {
		return nil, err
	}
	return p.Compile()
}

// bpfCache holds the programs precompile made, by profile (the exact JSON).
// The daemon uses a handful of profiles, one per tool; the bound only
// matters if profiles keep changing.
var bpfCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

const bpfCacheMax = 64

// precompileOn switches precompile off for tests and benchmarks (the init's
// own compile path must keep working: it is the fallback).
var precompileOn atomic.Bool

func init() { precompileOn.Store(true) }

// precompile compiles a seccomp profile to its BPF program in the daemon,
// once per distinct profile, so that the sandbox init neither parses the
// JSON nor builds the filter with libseccomp (together 2-3 ms of every
// init's setup for the safe_bash profile; see doc.go). nil means it could
// not: the init then compiles the profile itself, and reports a bad profile
// as a SetupError (step seccomp_parse).
//
// The program is the one libseccomp itself would load (seccomp_load and
// seccomp_export_bpf generate it the same way), for this kernel and
// architecture, which are the init's as well.
func precompile(profile []byte) []byte {
	if !precompileOn.Load() {
		return nil
	}
	bpfCache.mu.Lock()
	defer bpfCache.mu.Unlock()
	if b, ok := bpfCache.m[string(profile)]; ok {
		return b
	}
	p, err := seccomp.Parse(profile)
	if err != nil {
		return nil
	}
	f, err := p.Compile()
	if err != nil {
		return nil
	}
	defer f.Release()
	var buf bytes.Buffer
	if err := f.ExportBPF(&buf); err != nil {
		return nil
	}
	b := buf.Bytes()
	if _, err := decodeBPF(b); err != nil {
		return nil
	}
	if bpfCache.m == nil || len(bpfCache.m) >= bpfCacheMax {
		bpfCache.m = map[string][]byte{}
	}
	bpfCache.m[string(profile)] = b
	return b
}

// bpfProgram is a classic BPF seccomp program.
type bpfProgram []unix.SockFilter

// bpfMaxInsns is the kernel's limit on the length of one program.
const bpfMaxInsns = 4096

// decodeBPF reads a program as libseccomp exports it: struct sock_filter
// (u16 code, u8 jt, u8 jf, u32 k) in host byte order.
func decodeBPF(b []byte) (bpfProgram, error) {
	const size = int(unsafe.Sizeof(unix.SockFilter{}))
	if len(b) == 0 || len(b)%size != 0 || len(b)/size > bpfMaxInsns {
		return nil, fmt.Errorf("%d bytes are not a BPF program", len(b))
	}
	p := make(bpfProgram, len(b)/size)
	for i := range p {
		in := b[i*size:]
		p[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(in[0:]),
			Jt:   in[2],
			Jf:   in[3],
			K:    binary.NativeEndian.Uint32(in[4:]),
		}
	}
	return p, nil
}

// Load installs the program for every thread of the process (TSYNC), as
// seccomp.Filter.Load does. The caller has set no_new_privs (the init has,
// in finish). Any error means no filter is installed: the init must not
// exec then (fail closed).
func (p bpfProgram) Load() error {
	prog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("%w: seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %v", seccomp.ErrLoad, errno)
	}
	if r != 0 {
		// TSYNC failed: r is the thread that could not be synchronized.
		return fmt.Errorf("%w: seccomp: thread %d could not be synchronized", seccomp.ErrLoad, r)
	}
	return nil
}
