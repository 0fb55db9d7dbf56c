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
//
// Start returns as soon as the child exists, so the daemon creates the
// systemd scope for Child.Pid while the init builds its namespaces. The init
// then waits; Release lets it finish. In order, with the OS thread locked:
//
//  1. read the Spec;
//  2. make every mount private, open every host source, build the new root
//     (below), pivot_root into it and detach the old root;
//  3. chdir to Spec.Dir;
//  4. bring lo up (new network namespace only);
//  5. set the hostname; resolve Argv[0] in the command's PATH (exec mode);
//     parse and compile the seccomp profile;
//  6. report ready and block until the release (EOF: exit without running);
//  7. mark every descriptor but 0-2 close-on-exec, apply the rlimits, empty
//     the bounding, ambient, effective, permitted and inheritable
//     capability sets, set no_new_privs;
//  8. load the seccomp filter - last, so that nothing but the exec has to be
//     allowed by the profile;
//  9. execve Argv (exec mode), or execveat the contextd binary through an
//     O_PATH descriptor the daemon opened (tool mode: argv[0] =
//     "contextd-tool", then Argv).
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
// order (parents first):
//
//   - /usr, /etc and /bin, /sbin, /lib, /lib32, /lib64, /libx32 as they exist
//     (Spec.ReadOnly, default DefaultReadOnly): bind mounts, recursive, made
//     read-only. Host mounts below them are made read-only too. The remount
//     passes the flags the kernel locked on the host mount (nosuid, nodev,
//     noexec, the atime mode, read from statfs), which an unprivileged user
//     namespace may not clear (EPERM otherwise). A path that is a symlink
//     (/bin -> usr/bin on merged-/usr systems) is recreated as that symlink.
//   - Spec.ReadWrite: extra bind mounts, read-write (from config).
//   - $HOME (Spec.Home): an empty tmpfs, mode 0700, owned by the user: the
//     real home (~/.ssh, ~/.aws, shell history, ...) is invisible, while
//     $HOME stays a writable scratch directory for programs that need one.
//   - the workspace at its own (canonical) path: bind mount, read-write. It
//     usually lies below $HOME and is mounted over the tmpfs. A workspace
//     that is $HOME itself is refused (it would expose the whole home).
//   - /tmp: a fresh tmpfs, mode 1777.
//   - /proc: a new procfs of the sandbox's PID namespace: it shows only the
//     sandbox's processes. Mounted before the pivot, while the host's /proc is
//     still visible (the kernel requires a fully visible procfs in the mount
//     namespace to allow a new one in a user namespace).
//   - /dev: a small tmpfs with the host's null, zero, full, random, urandom
//     and tty bind-mounted in (a user namespace cannot mknod), a new devpts
//     instance at /dev/pts with /dev/ptmx -> pts/ptmx, a tmpfs /dev/shm,
//     and the fd, stdin, stdout and stderr links; then made read-only.
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
// own tmpfs mounts, components are opened one by one without following
// symbolic links, and mounts go through /proc/self/fd, so a symlink planted
// in the workspace cannot redirect one.
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
// # Latency
//
// BenchmarkStartToTrue compares Start to the end of `true` with `unshare
// -Urnpfm --mount-proc true`. The init's own work (mounts, pivot, lo,
// seccomp compile and load) is about 2.5 ms; most of the rest is the start of
// the re-executed binary, whose package initialisers all run before Init.
// Keep them cheap in the contextd binary.
package ns
