// Package ns is contextd's namespace sandbox: every tool call runs in a
// process that sees only the workspace (read-write), the system (read-only)
// and fresh /tmp, /proc and /dev; has no network but lo; has no capabilities,
// no_new_privs and a seccomp filter; and whose whole process tree dies with
// it.
//
// # How a sandbox starts
//
// The daemon calls Start. It re-executes the contextd binary itself
// (/proc/self/exe) with argv[0] = "contextd-sandbox-init" in new user, mount,
// PID, IPC, UTS and cgroup namespaces (and a new network namespace unless
// Spec.Network), the caller's uid and gid mapped to themselves. The binary's
// main calls Init first thing, which recognises the marker and becomes the
// sandbox init. The Spec travels as JSON on an inherited pipe (descriptor 3),
// never in argv or the environment; a SOCK_SEQPACKET socket (descriptor 4)
// carries "ready" or a SetupError to the daemon and the release byte back.
// The daemon compiles the seccomp profile to its BPF program (libseccomp,
// once per distinct profile, cached) and sends the program along instead of
// the profile; if it cannot, the init compiles the profile itself, as
// before.
//
// Pool.Start does the same with an init started ahead of time (see "Warm
// pool" below), so that the re-exec is not on the call's path.
//
// Start returns as soon as the child exists, so the daemon creates the
// systemd scope for Child.Pid while the init builds its namespaces. The init
// then waits; Release lets it finish. In order, with the OS thread locked:
//
//  1. read the Spec;
//  2. make every mount private, open every host source, build the new root
//     (below), pivot_root into it and detach the old root;
//  3. chdir to Spec.Dir;
//  4. bring lo up and listen on Spec.Listen (new network namespace only);
//  5. set the hostname; resolve Argv[0] in the command's PATH (exec mode);
//     check the BPF program the daemon sent (or parse and compile the
//     profile);
//  6. report ready, with the listening sockets of step 4 (SCM_RIGHTS),
//     close them, and block until the release (EOF: exit without running);
//  7. mark every descriptor but 0-2 close-on-exec, apply the rlimits, empty
//     the bounding, ambient, effective, permitted and inheritable
//     capability sets, set no_new_privs;
//  8. load the seccomp filter - last, so that nothing but the exec has to be
//     allowed by the profile (seccomp(SECCOMP_SET_MODE_FILTER) with
//     SECCOMP_FILTER_FLAG_TSYNC, as libseccomp's seccomp_load does);
//  9. execve Argv (exec mode), or, for a test's probe (ModeTestProbe),
//     execveat the binary itself through an O_PATH descriptor the daemon
//     opened (argv[0] = "contextd-tool", then Argv).
//
// The init execs the command, so the command is PID 1 of its namespace: when
// it exits, or when Kill kills it, the kernel kills every other process in
// the namespace (backgrounded and daemonized ones included). As PID 1 it
// does not get default signal actions for signals sent from inside the
// namespace (kill $$ from the command's own shell does nothing).
//
// Any failure is reported as a *SetupError (wrapping ErrSetup) naming the
// step, the system call and errno, and the command does not run: the
// sandbox fails closed.
//
// # The file system
//
// The new root is a tmpfs mounted over /tmp in the init's mount namespace
// (invisible to everyone else; host sources below /tmp were opened before it
// covered them, and are bound from their descriptors). Inside it, in path
// order (parents first; for one path, the later entry of this list on top),
// then the masks:
//
//   - /usr, /etc and /bin, /sbin, /lib, /lib32, /lib64, /libx32 as they exist
//     (Spec.ReadOnly, default DefaultReadOnly): bind mounts, recursive, made
//     read-only with the host mounts below them in one
//     mount_setattr(AT_RECURSIVE) (Linux 5.12; older kernels fail here),
//     which adds the flag and leaves the ones the kernel locked on a host
//     mount (nosuid, nodev, noexec, the atime mode) as they are: an
//     unprivileged user namespace may not clear them. A path that is a symlink
//     (/bin -> usr/bin on merged-/usr systems) is recreated as that symlink.
//   - Spec.ReadWrite: extra bind mounts, read-write (from config).
//   - Spec.Pins: workspace paths bound read-write onto themselves, after
//     the workspace, so that they cannot be renamed or replaced; one that
//     resolves outside the workspace by then stops the setup.
//   - $HOME (Spec.Home): an empty tmpfs, mode 0700, owned by the user: the
//     real home (~/.ssh, ~/.aws, shell history, ...) is invisible, while
//     $HOME stays a writable scratch directory for programs that need one.
//     With Spec.HomeDir, that host directory is bound there read-write
//     instead: a scratch home the daemon keeps per workspace, so that what
//     tools cache under $HOME (linters, test runners, pre-commit) is still
//     there at the next call. It must be a directory owned by the user, and,
//     once every link in its path is resolved, neither $HOME, nor above it,
//     nor in the workspace (checked when the init opens it). Mount points
//     for what lies below $HOME are created in it as on the tmpfs, and stay
//     there, empty. A sandboxed command can write anything into it,
//     including a symbolic link or a file where a later call needs a
//     directory: such a call then fails at setup (a link is never followed)
//     until the daemon clears the scratch home.
//   - the workspace at its own (canonical) path: bind mount, read-write. It
//     usually lies below $HOME and is mounted over the tmpfs (or HomeDir). A
//     workspace that is $HOME itself is refused (it would expose the whole
//     home).
//   - Spec.Binds: a host file or directory (Source, which must exist) at
//     another path (Target): bind mount, recursive, read-only unless
//     Writable, for example a copy of ~/.npmrc whose secrets the daemon
//     replaced. Target is placed like any host path: its parent directories
//     resolved on the host as far as they exist there.
//   - Spec.Overlays: an overlayfs at Target (default: Lower) whose lower
//     layer is the host directory Lower and whose upper and work
//     directories (Upper, Work: on one file system, made by the daemon,
//     out of the sandbox's sight) receive every write. The user's toolchain
//     caches are shown so: read as they are, changed at will inside, never
//     written (a poisoned build-cache entry would run in the user's own,
//     unsandboxed builds). The layers are opened with the other host
//     sources and named to the kernel as /proc/self/fd/N, option userxattr
//     (unprivileged overlayfs, Linux 5.11). overlayfs works on its layers
//     with the credentials of the mounter, which therefore keeps
//     CAP_DAC_OVERRIDE over the user's own files until the last steps; the
//     command's own permissions are checked first. A lower file owned by
//     an unmapped uid (root's) cannot be copied up: writing it fails with
//     EOVERFLOW. A missing Lower skips the entry and masks Target. A mount
//     the kernel refuses fails the setup (StepMounts, "mount", the layers):
//     the daemon decides any fallback before it builds the Spec, with
//     ProbeOverlay.
//   - /tmp: a fresh tmpfs, mode 1777.
//   - /proc: a new procfs of the sandbox's PID namespace: it shows only the
//     sandbox's processes. Mounted before the pivot, while the host's /proc is
//     still visible (the kernel requires a fully visible procfs in the mount
//     namespace to allow a new one in a user namespace).
//   - /dev: a small tmpfs with the host's null, zero, full, random, urandom
//     and tty bind-mounted in (a user namespace cannot mknod), a new devpts
//     instance at /dev/pts with /dev/ptmx -> pts/ptmx, a tmpfs /dev/shm,
//     and the fd, stdin, stdout and stderr links; then made read-only.
//   - Spec.Masks, after everything else, so that no other entry can cover
//     one or show something below one: paths never visible, whatever the
//     entries above show there (a read-only ~ or ~/.config, a bind, an
//     overlay, the workspace). A directory is covered by an empty
//     read-only tmpfs of mode 0, anything else by a read-only bind of an
//     empty file of mode 0: a read or a listing fails (EACCES), so does a
//     change, a removal or a rename (EROFS, EBUSY), and the mount cannot be
//     undone (no capability; in a nested user namespace the kernel locks
//     it). A mask is placed where the sandbox's tree has its path (its
//     parents resolved on the host) and covers whatever is there by now; a
//     path that is not there needs nothing, and nothing is created for it.
//     When the path is a symbolic link on the host, its target is masked
//     too, at its canonical path: the tree mirrors the host's canonical
//     paths, so a link inside an exposed tree resolves to that same path
//     and meets the mask. A symbolic link itself is never mounted over.
//     Masks hide paths, not files: a hard link to the same file elsewhere,
//     or the same directory reached through another host mount, is not
//     covered. A mask below /proc or /dev is refused; a link target there
//     is not masked (the sandbox has its own, and ~/.x -> /dev/null must not
//     take /dev/null away).
//
// Nothing else of the host is there: no /home beyond that, no /root, /var,
// /mnt, /opt, /srv, /media, and no /run, so the daemon's socket under
// /run/user/UID is not reachable. /sys is not mounted either: a new sysfs
// needs a network namespace of our own (not there in Network mode), a bind
// of the host's exposes host hardware and cgroup details, and the tools the
// sandbox runs (compilers, test runners, git) do not need it. The root
// tmpfs itself is read-only, so nothing can be created at the top level.
//
// No mount point is ever created inside a bind-mounted host tree (that would
// write to the host): missing mount points are created only on the init's
// own tmpfs mounts and in Spec.HomeDir (contextd's own scratch directory),
// told apart by mount id, components are opened one by one without
// following symbolic links, and mounts go through /proc/self/fd, so a
// symlink planted in the workspace cannot redirect one.
//
// # Limits
//
// DefaultRlimits: CORE 0, NOFILE 4096. Memory, tasks and CPU are the systemd
// scope's job (the daemon's, see daemon/scope). Limits are applied after the
// release, just before the exec, so they bind the command but not the init's
// own Go runtime.
//
// # Network
//
// With Network false the sandbox has a network namespace of its own with
// only lo, up: 127.0.0.1 works inside, nothing outside is reachable, not even
// the host's loopback or its abstract unix sockets. Network true keeps the
// host's network namespace (and so its abstract unix sockets too): an opt-in
// the daemon must record.
//
// The only way out of a namespace of its own is Spec.Listen: the init
// listens on those loopback addresses inside, before the command exists,
// and hands the sockets to the daemon with its ready message. A connection
// the command makes to one lands in the daemon's accept queue (its egress
// proxy, daemon/egress); the command never holds the sockets, and cannot
// take an address the daemon listens on. There is no bridge process: the
// kernel queues the connection on a socket of the sandbox's namespace and
// the daemon accepts it from there. (Entering the namespace from the daemon
// with setns would need CAP_SYS_ADMIN in the daemon's own user namespace.)
//
// # Warm pool
//
// Most of a fresh start is the re-exec of the contextd binary: the Go
// runtime, dynamic linking and the package initialisers of everything the
// daemon links, before Init runs (about 15-20 ms). A Pool (NewPool,
// DefaultPoolSize) keeps inits that have done that already: started with
// argv[1] "pooled", /dev/null as stdio and descriptors 3-5 as for a probe,
// in their new namespaces (a network namespace of their own included), they
// report "parked" and block on the sync socket. None of that depends on a
// call. Pool.Start claims one: it sends the call's stdin, stdout and stderr
// over the sync socket (SCM_RIGHTS, after a claim byte naming their
// targets), then writes the spec; the init dup3s them onto 0, 1 and 2
// before anything reads or writes them, and goes on from step 1 above
// exactly as a fresh one. A spec with Network, an empty pool or a stale
// init (below) gets a fresh start instead; the caller cannot tell
// otherwise: same Child, same errors, same guarantees.
//
// Pooled inits are started from one goroutine locked to its OS thread for
// good, because Pdeathsig fires when the creating thread exits, not the
// process: they die with the daemon and with nothing else. The pool refills
// in the background, one init at a time, and not while a call started
// through it is running (up to 200 ms): on a small machine a re-exec next
// to a call slows the call down by as much as the pool saves.
//
// A pooled init's mount namespace is a copy of the daemon's from when it
// was started. Mounts that propagate into the daemon's namespace propagate
// into the copy too; for mounts made in the daemon's namespace itself the
// pool polls /proc/self/mountinfo (the kernel flags every change of the
// mount table) and discards the inits started before a change. As a second
// check it compares the workspace (device and inode) in the daemon's view
// and through /proc/PID/root of the init. Either way the call gets a fresh
// start before anything was handed over: once the caller has the Child,
// its Pid is in a scope and the init cannot be replaced.
//
// # Func mode
//
// In ModeFunc the init does not exec: after the same last steps (7 and 8
// above) it runs the function the binary registered (Hooks.Func) as PID 1,
// and that function starts whatever it runs (safe_bash's shell) as its
// children. Its sync socket, close-on-exec, stays open for one more message.
// When the function returns, the init SIGKILLs every other process of its
// PID namespace (kill(-1)), reaps until wait4 reports ECHILD (none left, and
// none can start: only this process is left to fork), closes descriptors
// 0-2, and only then sends "ended" with the function's exit code
// (Child.Ended, Child.EndCode), before it exits. The daemon takes the call
// as over at that message: the output is complete and nothing of the
// sandbox can act any more, while the kernel still spends 3-5 ms ending the
// init itself (its Go threads, its address space, its namespaces and their
// mounts). Whatever must outlive those mounts waits for Wait. If wait4
// fails otherwise (a profile that refuses it), no message is sent and Wait
// is the end, as for an exec'd command.
//
// # Latency
//
// BenchmarkStartToTrue compares Start, Pool.Start and `unshare -Urnpfm
// --mount-proc true`, from the start to the end of `true`. On a 2-CPU VM
// (allow-all profile; means of three runs of 150):
//
//	fresh Start       22 ms      (setup, Start to Ready: 17.6-17.8 ms)
//	Pool.Start         8.1-8.2 ms (setup: 3.6-3.7 ms)
//	unshare            8.6-9.1 ms
//	Pool.Start, back to back with the refill of the call before: 14.5-15 ms
//
// Of a pooled call, the claim takes 0.4 ms, the init's setup (mounts,
// pivot_root, lo, hostname, PATH lookup) 2.7 ms, the last steps and the
// exec 2 ms (most of it the kernel ending the init's Go threads and its
// address space), `true` and the teardown of its namespaces 1.8 ms.
// Compiling the seccomp profile in the daemon instead of the init saves 3 ms
// of setup with the safe_bash profile (BenchmarkSeccompPrecompile: JSON
// decoding and libseccomp's rule building and BPF generation, cold in every
// init). The contextd binary's package initialisers still run in every
// init, fresh or pooled; only a fresh start waits for them.
package ns
