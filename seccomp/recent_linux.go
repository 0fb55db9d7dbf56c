package seccomp

import "golang.org/x/sys/unix"

// recentSyscalls are system calls added to Linux after the syscall table of
// the libseccomp this project builds against (Debian 12's 2.5.4 knows up to
// futex_requeue, 456). Since Linux 5.1 new system calls get the same number
// on every architecture, so golang.org/x/sys has the right one for the
// build's GOARCH. Compile uses this table only for names libseccomp cannot
// resolve.
var recentSyscalls = map[string]int{
	"futex_wait":        unix.SYS_FUTEX_WAIT,
	"futex_requeue":     unix.SYS_FUTEX_REQUEUE,
	"statmount":         unix.SYS_STATMOUNT,
	"listmount":         unix.SYS_LISTMOUNT,
	"lsm_get_self_attr": unix.SYS_LSM_GET_SELF_ATTR,
	"lsm_set_self_attr": unix.SYS_LSM_SET_SELF_ATTR,
	"lsm_list_modules":  unix.SYS_LSM_LIST_MODULES,
	"mseal":             unix.SYS_MSEAL,
	"setxattrat":        unix.SYS_SETXATTRAT,
	"getxattrat":        unix.SYS_GETXATTRAT,
	"listxattrat":       unix.SYS_LISTXATTRAT,
	"removexattrat":     unix.SYS_REMOVEXATTRAT,
	"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
	"file_getattr":      unix.SYS_FILE_GETATTR,
	"file_setattr":      unix.SYS_FILE_SETATTR,
}
