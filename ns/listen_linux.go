package ns

import (
	"errors"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// openListeners opens Spec.Listen in the sandbox's network namespace (lo is
// up by now). An IPv6 address where the namespace has no IPv6 (disabled on
// the host) is skipped: the daemon learns which addresses listen from the
// ready message. Any other failure fails the setup.
func (sb *sandbox) openListeners() *SetupError {
	for _, a := range sb.spec.Listen {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return &SetupError{Step: StepNetwork, Msg: "listen address " + a + ": " + err.Error()}
		}
		fd, e := listenTCP(ap)
		if e != nil {
			if ap.Addr().Is6() && (errors.Is(e.Errno, unix.EADDRNOTAVAIL) || errors.Is(e.Errno, unix.EAFNOSUPPORT)) {
				continue
			}
			return e
		}
		sb.listenFds = append(sb.listenFds, fd)
		sb.listening = append(sb.listening, ap.String())
	}
	return nil
}

func listenTCP(ap netip.AddrPort) (int, *SetupError) {
	family := unix.AF_INET
	var sa unix.Sockaddr
	if ap.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, sysErr(StepNetwork, "socket", ap.String(), err)
	}
	if family == unix.AF_INET6 {
		// Only ::1 itself, not the IPv4 addresses too.
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, sysErr(StepNetwork, "bind", ap.String(), err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, sysErr(StepNetwork, "listen", ap.String(), err)
	}
	return fd, nil
}

// Listener is one of Spec.Listen as the daemon holds it: a listening socket
// in the sandbox's network namespace.
type Listener struct {
	Addr string // as in Spec.Listen, normalized ("127.0.0.1:3128", "[::1]:4873")
	net.Listener
}

// fileListeners turns the descriptors the init sent into listeners; fds
// are closed (net.FileListener dups them).
func fileListeners(addrs []string, fds []int) ([]Listener, error) {
	var out []Listener
	var first error
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "sandbox-listener")
		if i >= len(addrs) {
			f.Close()
			continue
		}
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		out = append(out, Listener{Addr: addrs[i], Listener: l})
	}
	if first != nil || len(out) != len(addrs) {
		for _, l := range out {
			l.Close()
		}
		if first == nil {
			first = errors.New("the init sent fewer listeners than it named")
		}
		return nil, first
	}
	return out, nil
}
