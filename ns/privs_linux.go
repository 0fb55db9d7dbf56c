package ns

import (
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// loopbackUp brings lo up in the new network namespace, which has nothing
// else: no other interface, no route out. The kernel gives lo 127.0.0.1/8
// and ::1 as soon as it is up.
func loopbackUp() *SetupError {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sysErr(StepNetwork, "socket", "lo", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return sysErr(StepNetwork, "ioctl", "lo", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return sysErr(StepNetwork, "ioctl(SIOCGIFFLAGS)", "lo", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return sysErr(StepNetwork, "ioctl(SIOCSIFFLAGS)", "lo", err)
	}
	return nil
}

// closeInheritedFds marks every descriptor above 2 close-on-exec, so the
// command starts with stdin, stdout and stderr only. Marking instead of
// closing keeps the Go runtime's own descriptors (and the sync socket, for
// reporting a failed exec) working until the exec.
func closeInheritedFds() *SetupError {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL {
		return sysErr(StepFds, "close_range", "", err)
	}
	// Kernels before 5.11: walk the descriptor table (our own /proc).
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return sysErr(StepFds, "open", "/proc/self/fd", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return sysErr(StepFds, "getdents", "/proc/self/fd", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return sysErr(StepFds, "fcntl", "fd "+n, err)
		}
	}
	return nil
}

// setRlimits applies the limits; a value above the current hard limit is
// lowered to it (raising a hard limit needs CAP_SYS_RESOURCE in the initial
// user namespace, which the sandbox never has). syscall.Setrlimit, not
// unix.Setrlimit: for NOFILE it also stops the Go runtime from restoring the
// soft limit it found at start-up when it execs.
func setRlimits(limits []Rlimit) *SetupError {
	for _, l := range limits {
		res, ok := rlimitResources[l.Resource]
		if !ok {
			return &SetupError{Step: StepRlimits, Path: l.Resource, Msg: "unknown resource"}
		}
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(res, &cur); err != nil {
			return sysErr(StepRlimits, "getrlimit", "RLIMIT_"+l.Resource, err)
		}
		soft, hard := l.Soft, l.Hard
		if hard > cur.Max {
			hard = cur.Max
		}
		if soft > hard {
			soft = hard
		}
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: soft, Max: hard}); err != nil {
			return sysErr(StepRlimits, "setrlimit", "RLIMIT_"+l.Resource, err)
		}
	}
	return nil
}

// dropCapabilities empties the bounding set (so nothing executed later can
// regain a capability, even from file capabilities), the ambient set the
// init was started with, and finally the effective, permitted and
// inheritable sets of this thread (the one that will exec).
func dropCapabilities() *SetupError {
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == unix.EINVAL {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return sysErr(StepCaps, "prctl", "PR_CAPBSET_DROP "+strconv.Itoa(c), err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return sysErr(StepCaps, "prctl", "PR_CAP_AMBIENT_CLEAR_ALL", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return sysErr(StepCaps, "capset", "", err)
	}
	return nil
}
