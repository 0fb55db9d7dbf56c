package scope

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupInfo is what the user manager can enforce, read from the cgroup
// file systems at connect time.
type cgroupInfo struct {
	root        string   // the manager's cgroup, e.g. /user.slice/user-1000.slice/user@1000.service
	controllers []string // delegated controllers, sorted
	cpuQuota    bool     // CPUQuota on a scope is enforced
	cpuWhy      string   // why not, when !cpuQuota
}

// cgroupMount is one cgroup file system from /proc/self/mountinfo.
type cgroupMount struct {
	dir         string
	v2          bool
	controllers []string // v1: the controllers bound to this hierarchy
}

const (
	mountinfoPath = "/proc/self/mountinfo"
	cgroupsPath   = "/proc/cgroups"
)

// detectCgroups works out which controllers the manager rooted at root may
// use, the way systemd itself decides (cg_mask_supported_subtree):
//   - cgroup v2 with controllers (pure unified): the controllers listed in
//     the manager cgroup's cgroup.controllers, i.e. those its parent
//     delegated to it;
//   - cgroup v1 / hybrid: every v1 hierarchy in which the manager's cgroup
//     exists and its cgroup.procs is writable by us.
//
// CPU quota needs more than "cpu" on v1: systemd assumes cpu and cpuacct
// are mounted together and handles them as one joined controller. Where
// they are separate hierarchies and only cpu is delegated (the dev/CI VMs:
// e2e/usermgr.sh delegates cpu, not cpuacct), systemd accepts CPUQuota=,
// even reports the cgroup as realized for cpu, but never creates the
// scope's cgroup in the cpu hierarchy: the quota is silently not enforced.
// Delegating cpuacct as well makes it work (measured on systemd 252 with
// cpu and cpuacct mounted separately).
func detectCgroups(root string) cgroupInfo {
	info := cgroupInfo{root: root}
	mounts := readCgroupMounts()
	known := knownControllers()
	var v1, v2 []string
	var sawV2Ctl, sawV1 bool
	for _, mt := range mounts {
		dir := filepath.Join(mt.dir, root)
		if mt.v2 {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(b)) {
				sawV2Ctl = true
				v2 = append(v2, c)
			}
			continue
		}
		var ctls []string
		for _, c := range mt.controllers {
			if known[c] {
				ctls = append(ctls, c)
			}
		}
		if len(ctls) == 0 {
			continue // a named hierarchy (name=systemd) or unknown
		}
		sawV1 = true
		if unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) == nil {
			v1 = append(v1, ctls...)
		}
	}
	all := append(v1, v2...)
	slices.Sort(all)
	info.controllers = slices.Compact(all)

	switch {
	case slices.Contains(v2, "cpu"):
		info.cpuQuota = true
	case slices.Contains(v1, "cpu") && slices.Contains(v1, "cpuacct"):
		info.cpuQuota = true
	case slices.Contains(v1, "cpu"):
		info.cpuWhy = "cgroup v1: the cpu hierarchy is delegated to the user manager but cpuacct is not; systemd handles cpu and cpuacct as one controller and then silently ignores CPUQuota (delegate " + filepath.Join("/sys/fs/cgroup/cpuacct", root) + " too)"
	case sawV2Ctl:
		info.cpuWhy = "cgroup v2: the cpu controller is not delegated to the user manager (" + filepath.Join("/sys/fs/cgroup", root, "cgroup.controllers") + " lacks cpu; systemd delegates only memory and pids by default: add Delegate=cpu cpuset io memory pids in a user@.service drop-in)"
	case sawV1:
		info.cpuWhy = "cgroup v1: the user manager's cgroup " + root + " is not writable in the cpu hierarchy (cpu not delegated)"
	default:
		info.cpuWhy = "no cgroup controllers are available to the user manager"
	}
	return info
}

// readCgroupMounts lists the cgroup and cgroup2 mounts of this mount
// namespace.
func readCgroupMounts() []cgroupMount {
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint opts [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, sf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(sf) < 3 {
			continue
		}
		dir := unescapeMountinfo(pf[4])
		switch sf[0] {
		case "cgroup2":
			out = append(out, cgroupMount{dir: dir, v2: true})
		case "cgroup":
			out = append(out, cgroupMount{dir: dir, controllers: strings.Split(sf[2], ",")})
		}
	}
	return out
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, ...) of
// mountinfo fields.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			o := s[i+1 : i+4]
			if o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7' {
				b.WriteByte((o[0]-'0')<<6 | (o[1]-'0')<<3 | (o[2] - '0'))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// knownControllers are the controller names of the running kernel, from
// /proc/cgroups, to tell them from mount options (rw, clone_children, ...)
// in a v1 mount's super options.
func knownControllers() map[string]bool {
	known := map[string]bool{}
	b, err := os.ReadFile(cgroupsPath)
	if err != nil {
		for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer", "net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc"} {
			known[c] = true
		}
		return known
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			known[f[0]] = true
		}
	}
	return known
}
