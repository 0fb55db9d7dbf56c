// Package scope puts each tool call into its own transient systemd scope on the user manager, for resource limits and a clean kill.
package scope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
)

// Defaults for the zero values of Spec.
const (
	DefaultMemoryMax uint64 = 1 << 30 // 1 GiB
	DefaultTasksMax  uint64 = 512

	// Slice holds every scope, so that the user (or a drop-in shipped in
	// systemd/) can cap all tool calls together.
	Slice = "contextd.slice"

	// RuntimeMargin is added to Spec.RuntimeMax for the scope's
	// RuntimeMaxUSec: the daemon's own timer stops the scope first and can
	// report the timeout; systemd's limit is the backstop for when the
	// daemon died or hung.
	RuntimeMargin = time.Second

	// stopTimeout bounds how long systemd waits after SIGTERM when it stops
	// the scope on its own (RuntimeMaxUSec hit): the default,
	// DefaultTimeoutStopSec, is 90 s, far too long for a runaway command.
	stopTimeout = time.Second

	// cleanupTimeout bounds the background stop of a scope whose start was
	// abandoned.
	cleanupTimeout = 5 * time.Second

	// redialTimeout bounds a re-dial inside Start/Stop, which holds the
	// Manager's lock: a hung bus must not block every caller for the
	// length of the longest call's context.
	redialTimeout = 5 * time.Second

	// maxUnitName is systemd's UNIT_NAME_MAX (256) without the NUL.
	maxUnitName = 255
)

// ErrUnavailable is wrapped by every error that means "there is no usable
// systemd user manager": the daemon then runs calls without the scope layer
// and says so. The wrapping error says what is missing.
var ErrUnavailable = errors.New("scope: systemd user manager unavailable")

// ErrClosed is returned by Start and Stop after Manager.Close.
var ErrClosed = errors.New("scope: manager closed")

// JobError is returned when systemd ran a start or stop job that did not
// succeed; Result is systemd's job result ("failed", "timeout", "canceled",
// "dependency", "skipped", ...).
type JobError struct {
	Unit   string
	Job    string // "start" or "stop"
	Result string
}

func (e *JobError) Error() string {
	return fmt.Sprintf("scope: %s job for %s finished with result %q", e.Job, e.Unit, e.Result)
}

// Spec describes the scope of one tool call. Zero values mean the defaults.
type Spec struct {
	Tool string // tool name, part of the unit name (required)
	ID   string // call id, part of the unit name; unique per call; random when empty
	PID  int    // process to put into the scope (required); its later children follow it

	MemoryMax       uint64        // bytes; 0 = DefaultMemoryMax
	TasksMax        uint64        // processes+threads; 0 = DefaultTasksMax
	CPUQuotaPercent int           // 100 = one CPU; 0 = no quota; applied only where the cpu controller works (Manager.CPUQuota)
	RuntimeMax      time.Duration // the call's timeout; 0 = no runtime limit; the scope gets RuntimeMax+RuntimeMargin
	Description     string        // shown by systemctl; should name the tool and the session; default "contextd <tool> call <id>"
}

// Limits are the limits a scope was created with.
type Limits struct {
	MemoryMax       uint64
	TasksMax        uint64
	CPUQuotaPercent int           // 0 when none was requested or the cpu controller does not work
	RuntimeMax      time.Duration // what systemd enforces (with the margin); 0 = none
}

// Manager holds one long-lived D-Bus connection to the user manager and
// creates scopes over it. It is safe for concurrent use: Start and Stop are
// called from one goroutine per tool call.
//
// Concurrency notes on go-systemd's job tracking, which this relies on:
//   - StartTransientUnitContext/StopUnitContext with a result channel hold
//     the connection's job-listener mutex across the whole D-Bus round trip
//     and register the channel before releasing it. The JobRemoved signal
//     arrives on a second connection and can overtake the method reply; the
//     dispatcher takes the same mutex, so it cannot look the job up before it
//     is registered. The price: job-creating calls on one Manager are
//     serialized, one round trip (~1-3 ms) at a time.
//   - The dispatcher sends the result into our channel while holding that
//     mutex. An unbuffered channel whose reader gave up (its ctx expired)
//     would block the dispatcher forever and wedge every later job on the
//     connection, so every result channel here has capacity 1.
//   - A job whose JobRemoved never comes (the connection died) leaves its
//     channel registered in the dead connection; it is dropped with it.
type Manager struct {
	addr string

	// life is the lifetime of the bus connections: godbus closes a
	// connection when the context it was dialed with is done, so they are
	// dialed with this one, never with a caller's (short) context.
	life   context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards cn, info, closed
	cn     *conn      // nil once lost and not yet re-dialed
	info   cgroupInfo
	closed bool
}

// conn is one go-systemd connection (two bus connections inside: one for
// calls, one for signals) plus a channel closed when either of them dies.
type conn struct {
	sd   *sd.Conn
	lost chan struct{}
	addr string // where it is connected: systemd's private socket or a bus
}

func (c *conn) isLost() bool {
	select {
	case <-c.lost:
		return true
	default:
		return !c.sd.Connected()
	}
}

// Connect dials the user manager over its private socket, else over the
// session bus ($DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus), and checks that
// systemd answers there. ctx bounds only the connecting, not the life of the
// connection. Errors wrap ErrUnavailable and say what is missing.
func Connect(ctx context.Context) (*Manager, error) {
	addr, err := busAddress()
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	m := &Manager{addr: addr, life: life, cancel: cancel}
	cn, info, err := m.dial(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	m.cn, m.info = cn, info
	return m, nil
}

// busAddress finds the session bus the way sd_bus_open_user does. It never
// autolaunches a bus (godbus would run dbus-launch when no address is set;
// a bus without systemd on it is of no use here).
func busAddress() (string, error) {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a, nil
	}
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return "", fmt.Errorf("%w: neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set (no login session; run under `systemd --user`, or enable lingering with `loginctl enable-linger`)", ErrUnavailable)
	}
	p := filepath.Join(rt, "bus")
	st, err := os.Stat(p)
	if err != nil || st.Mode().Type() != os.ModeSocket {
		return "", fmt.Errorf("%w: DBUS_SESSION_BUS_ADDRESS is not set and there is no bus socket at %s (install dbus-user-session, or the user manager is not running)", ErrUnavailable, p)
	}
	return "unix:path=" + p, nil
}

// privateAddress is the user manager's own socket,
// $XDG_RUNTIME_DIR/systemd/private, when there is one: a direct connection
// to systemd, as systemctl --user and systemd-run --user use, with no bus
// daemon relaying every call and signal (a scope's start is a call and a
// JobRemoved signal: two hops fewer each way, and no dbus-daemon competing
// with the sandbox for the CPU). "" when there is none.
func privateAddress() string {
	rt := os.Getenv("XDG_RUNTIME_DIR")
	if rt == "" {
		return ""
	}
	p := filepath.Join(rt, "systemd", "private")
	if st, err := os.Stat(p); err != nil || st.Mode().Type() != os.ModeSocket {
		return ""
	}
	return "unix:path=" + p
}

// dial connects to the user manager: over its private socket when there
// is one and systemd answers there, else over the session bus.
func (m *Manager) dial(ctx context.Context) (*conn, cgroupInfo, error) {
	if p := privateAddress(); p != "" {
		if cn, info, err := m.dialAt(ctx, p, false); err == nil {
			return cn, info, nil
		}
	}
	return m.dialAt(ctx, m.addr, true)
}

// dialAt opens a new go-systemd connection to addr (hello: a bus, which
// wants a Hello first; systemd's private socket does not), checks that
// systemd answers on it, and reads the manager's cgroup setup.
func (m *Manager) dialAt(ctx context.Context, addr string, hello bool) (*conn, cgroupInfo, error) {
	type result struct {
		c   *sd.Conn
		bus []*godbus.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		// godbus's Dial/Auth/Hello and go-systemd's AddMatch take no
		// context; run them aside so ctx still bounds Connect.
		var bus []*godbus.Conn
		var mu sync.Mutex
		c, err := sd.NewConnection(func() (*godbus.Conn, error) {
			b, err := dialBus(m.life, addr, hello)
			if err == nil {
				mu.Lock()
				bus = append(bus, b)
				mu.Unlock()
			}
			return b, err
		})
		done <- result{c, bus, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() { // close whatever the abandoned dial still produces
			if r := <-done; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, cgroupInfo{}, fmt.Errorf("%w: connecting to the session bus at %s: %v", ErrUnavailable, addr, ctx.Err())
	}
	if r.err != nil {
		return nil, cgroupInfo{}, fmt.Errorf("%w: cannot connect to the session bus at %s: %v", ErrUnavailable, addr, r.err)
	}
	cn := &conn{sd: r.c, lost: make(chan struct{}), addr: addr}
	// Any of the bus connections (go-systemd dials two: calls, signals)
	// closing (EOF when the bus or the user manager went away, or Close)
	// makes the whole conn unusable. godbus cancels a connection's context
	// when it closes, whatever the reason.
	var once sync.Once
	for _, b := range r.bus {
		go func() {
			<-b.Context().Done()
			once.Do(func() { close(cn.lost) })
		}()
	}

	// Is systemd on this bus? (A bare dbus-daemon, or a user manager that
	// is still starting, answers with ServiceUnknown/NameHasNoOwner.)
	if _, err := cn.sd.SystemStateContext(ctx); err != nil {
		cn.sd.Close()
		return nil, cgroupInfo{}, fmt.Errorf("%w: no systemd user manager (org.freedesktop.systemd1) answers on the session bus at %s: %v", ErrUnavailable, addr, err)
	}
	root, err := managerCgroup(cn.sd)
	if err != nil {
		cn.sd.Close()
		return nil, cgroupInfo{}, fmt.Errorf("%w: reading the user manager's ControlGroup: %v", ErrUnavailable, err)
	}
	return cn, detectCgroups(root), nil
}

// dialBus does what go-systemd's (unexported) dbusAuthHelloConnection does
// (without the Hello for systemd's private socket), with the connection's
// lifetime bound to life instead of a caller's ctx.
func dialBus(life context.Context, addr string, hello bool) (*godbus.Conn, error) {
	c, err := godbus.Dial(addr, godbus.WithContext(life))
	if err != nil {
		return nil, err
	}
	// EXTERNAL with the numeric uid: no user-name lookup.
	if err := c.Auth([]godbus.Auth{godbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		c.Close()
		return nil, err
	}
	if !hello {
		return c, nil
	}
	if err := c.Hello(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// managerCgroup reads the manager's own root cgroup (Manager.ControlGroup),
// e.g. /user.slice/user-1000.slice/user@1000.service.
func managerCgroup(c *sd.Conn) (string, error) {
	s, err := c.GetManagerProperty("ControlGroup")
	if err != nil {
		return "", err
	}
	// GetManagerProperty gives the GVariant text form, e.g. "'/user.slice/…'".
	v, err := godbus.ParseVariant(s, godbus.Signature{})
	if err != nil {
		return "", fmt.Errorf("parsing %q: %v", s, err)
	}
	root, ok := v.Value().(string)
	if !ok {
		return "", fmt.Errorf("ControlGroup is %s, not a string", v.Signature())
	}
	return root, nil
}

// current returns the live connection, re-dialing once if the last one was
// lost (the bus or the user manager restarted). Holding mu while dialing
// makes concurrent callers wait for one re-dial instead of racing their own.
func (m *Manager) current(ctx context.Context) (*conn, cgroupInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, cgroupInfo{}, ErrClosed
	}
	if m.cn != nil && !m.cn.isLost() {
		return m.cn, m.info, nil
	}
	if m.cn != nil {
		m.cn.sd.Close()
		m.cn = nil
	}
	ctx, cancel := context.WithTimeout(ctx, redialTimeout)
	defer cancel()
	cn, info, err := m.dial(ctx)
	if err != nil {
		return nil, cgroupInfo{}, err
	}
	m.cn, m.info = cn, info
	return cn, info, nil
}

// Controllers lists the cgroup controllers the user manager can use for its
// units (delegated to it), e.g. [cpu cpuacct memory pids]: on cgroup v2 the
// manager cgroup's cgroup.controllers, on v1/hybrid the hierarchies where
// the manager's cgroup is writable. For `contextd doctor`.
func (m *Manager) Controllers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.info.controllers...)
}

// CPUQuota reports whether a CPU quota set on a scope is actually enforced
// here, and why not when it is not.
func (m *Manager) CPUQuota() (ok bool, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.info.cpuQuota, m.info.cpuWhy
}

// Close closes the connection. Scopes already started keep running (with
// their RuntimeMax as the backstop); Stop on them fails with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.cn != nil {
		m.cn.sd.Close()
		m.cn = nil
	}
	m.cancel()
	return nil
}

// UnitName returns the scope unit name for a tool and call id,
// contextd-<tool>-<id>.scope, with every byte outside systemd's unit-name
// alphabet [A-Za-z0-9:_.-] escaped as \xNN (as systemd-escape does).
func UnitName(tool, id string) (string, error) {
	if tool == "" {
		return "", errors.New("scope: empty tool name")
	}
	if id == "" {
		return "", errors.New("scope: empty call id")
	}
	name := "contextd-" + escape(tool) + "-" + escape(id) + ".scope"
	if len(name) > maxUnitName {
		return "", fmt.Errorf("scope: unit name for tool %q, id %q is %d bytes long, systemd allows %d", tool, id, len(name), maxUnitName)
	}
	return name, nil
}

func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == ':', c == '_', c == '.', c == '-':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails on Linux (getrandom)
	return hex.EncodeToString(b[:])
}

// Scope is one started transient scope unit.
type Scope struct {
	m      *Manager
	name   string
	limits Limits

	mu      sync.Mutex // serializes Stop; guards stopped, cgroup
	stopped bool
	cgroup  string
}

// Name is the unit name, e.g. contextd-safe_bash-1f2e3d.scope.
func (s *Scope) Name() string { return s.name }

// Limits are the limits the scope was created with.
func (s *Scope) Limits() Limits { return s.limits }

// Start creates the transient scope contextd-<tool>-<id>.scope in
// contextd.slice for spec.PID, with the spec's limits, and waits for
// systemd's start job to finish. The process keeps running throughout;
// its children started after Start returns are in the scope (start the
// command held, release it after Start).
//
// If ctx ends before the job finished, the scope (if systemd still makes
// it) is stopped in the background, killing spec.PID.
func (m *Manager) Start(ctx context.Context, spec Spec) (*Scope, error) {
	if spec.PID <= 0 {
		return nil, fmt.Errorf("scope: invalid PID %d", spec.PID)
	}
	if spec.CPUQuotaPercent < 0 {
		return nil, fmt.Errorf("scope: negative CPU quota %d%%", spec.CPUQuotaPercent)
	}
	if spec.RuntimeMax < 0 {
		return nil, fmt.Errorf("scope: negative RuntimeMax %v", spec.RuntimeMax)
	}
	if spec.ID == "" {
		spec.ID = randomID()
	}
	name, err := UnitName(spec.Tool, spec.ID)
	if err != nil {
		return nil, err
	}

	for attempt := 0; ; attempt++ {
		cn, info, err := m.current(ctx)
		if err != nil {
			return nil, err
		}
		props, lim := properties(spec, info.cpuQuota)
		ch := make(chan string, 1) // capacity 1: see Manager
		if _, err := cn.sd.StartTransientUnitContext(ctx, name, "fail", props, ch); err != nil {
			if attempt == 0 && cn.isLost() && ctx.Err() == nil {
				// The connection died under us (user manager or bus
				// restarted): re-dial once and try again. (If the old
				// manager did create the unit, the retry fails with
				// "already loaded"; the caller kills its child, which
				// empties the scope and ends it.)
				continue
			}
			if ctx.Err() != nil {
				// The request may have reached systemd before the reply
				// was given up on. Not done for other errors: for
				// "already loaded" the unit is someone else's.
				m.stopAside(name)
			}
			if cn.isLost() {
				return nil, fmt.Errorf("%w: connection lost starting %s: %v", ErrUnavailable, name, err)
			}
			return nil, fmt.Errorf("scope: starting %s: %w", name, err)
		}
		select {
		case res := <-ch:
			if res != "done" {
				m.stopAside(name)
				return nil, &JobError{Unit: name, Job: "start", Result: res}
			}
			return &Scope{m: m, name: name, limits: lim}, nil
		case <-cn.lost:
			m.stopAside(name) // over the next connection, if the manager is still there
			return nil, fmt.Errorf("%w: connection lost waiting for the start job of %s", ErrUnavailable, name)
		case <-ctx.Done():
			m.stopAside(name)
			return nil, fmt.Errorf("scope: waiting for the start job of %s: %w", name, ctx.Err())
		}
	}
}

// properties builds the transient unit's properties from spec and returns
// the limits they set.
func properties(spec Spec, cpuQuota bool) ([]sd.Property, Limits) {
	lim := Limits{MemoryMax: spec.MemoryMax, TasksMax: spec.TasksMax}
	if lim.MemoryMax == 0 {
		lim.MemoryMax = DefaultMemoryMax
	}
	if lim.TasksMax == 0 {
		lim.TasksMax = DefaultTasksMax
	}
	desc := spec.Description
	if desc == "" {
		desc = fmt.Sprintf("contextd %s call %s", spec.Tool, spec.ID)
	}
	props := []sd.Property{
		sd.PropDescription(strings.ToValidUTF8(desc, "?")),
		sd.PropSlice(Slice),
		sd.PropPids(uint32(spec.PID)),
		{Name: "MemoryMax", Value: godbus.MakeVariant(lim.MemoryMax)},
		// No swap: with swap the kernel pushes a call at its MemoryMax out
		// to disk instead of killing it, and the user's whole machine slows
		// down while the call crawls on.
		{Name: "MemorySwapMax", Value: godbus.MakeVariant(uint64(0))},
		{Name: "TasksMax", Value: godbus.MakeVariant(lim.TasksMax)},
		// A failed scope (OOM kill, runtime limit) would otherwise stay
		// loaded until reset-failed; thousands of calls would pile up.
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
		{Name: "TimeoutStopUSec", Value: godbus.MakeVariant(uint64(stopTimeout / time.Microsecond))},
	}
	if spec.CPUQuotaPercent > 0 && cpuQuota {
		// CPUQuota=N% is CPUQuotaPerSecUSec=N*10ms. Without a working cpu
		// controller systemd accepts the property and silently ignores it,
		// so it is only sent (and reported in Limits) where it works.
		lim.CPUQuotaPercent = spec.CPUQuotaPercent
		props = append(props, sd.Property{Name: "CPUQuotaPerSecUSec",
			Value: godbus.MakeVariant(uint64(spec.CPUQuotaPercent) * 10000)})
	}
	if spec.RuntimeMax > 0 {
		lim.RuntimeMax = spec.RuntimeMax + RuntimeMargin
		props = append(props, sd.Property{Name: "RuntimeMaxUSec",
			Value: godbus.MakeVariant(uint64(lim.RuntimeMax / time.Microsecond))})
	}
	return props, lim
}

// stopAside stops a unit whose start was abandoned or failed, so no scope
// (and no process of the call) is left behind. Best effort, in the
// background, bounded by cleanupTimeout.
func (m *Manager) stopAside(name string) {
	go func() {
		ctx, cancel := context.WithTimeout(m.life, cleanupTimeout)
		defer cancel()
		_ = m.stopUnit(ctx, name)
	}()
}

// Stop kills every process in the scope (SIGKILL to all of them, including
// grandchildren and daemonized or setsid'd processes: they all stay in the
// scope's cgroup) and then stops the unit, waiting for the stop job. When
// it returns nil the scope's cgroup is empty and the unit is gone or going.
// Idempotent and safe to call concurrently (timeout, cancel and a
// disconnecting caller may race to it); a scope that already ended on its
// own (RuntimeMax, all processes exited) stops without error.
//
// Stop is cleanup: do not pass the context of the call being cancelled (it
// is done already, and Stop would give up at once); pass e.g.
// context.WithoutCancel(callCtx) with a timeout of a few seconds.
func (s *Scope) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	if err := s.m.stopUnit(ctx, s.name); err != nil {
		return err
	}
	s.stopped = true
	return nil
}

func (m *Manager) stopUnit(ctx context.Context, name string) error {
	for attempt := 0; ; attempt++ {
		cn, _, err := m.current(ctx)
		if err != nil {
			return err
		}
		// SIGKILL first: StopUnit alone sends SIGTERM and waits
		// TimeoutStopUSec, and a command may ignore SIGTERM. systemd
		// re-scans the cgroup until no new process shows up, so a fork
		// racing with the kill is caught too.
		err = cn.sd.KillUnitWithTarget(ctx, name, sd.All, int32(unix.SIGKILL))
		switch {
		case isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit"):
			return nil // already gone (ended and collected)
		case err != nil && attempt == 0 && cn.isLost() && ctx.Err() == nil:
			continue
		}
		// Other kill errors (NoSuchProcess: the scope is empty already)
		// are not fatal: StopUnit below kills too.
		ch := make(chan string, 1) // capacity 1: see Manager
		if _, err := cn.sd.StopUnitContext(ctx, name, "replace", ch); err != nil {
			if isDBusError(err, "org.freedesktop.systemd1.NoSuchUnit") {
				return nil // emptied by the kill and collected meanwhile
			}
			if attempt == 0 && cn.isLost() && ctx.Err() == nil {
				continue
			}
			return fmt.Errorf("scope: stopping %s: %w", name, err)
		}
		select {
		case res := <-ch:
			if res != "done" {
				return &JobError{Unit: name, Job: "stop", Result: res}
			}
			return nil
		case <-cn.lost:
			if attempt == 0 && ctx.Err() == nil {
				continue // the manager restarted; ask the new one
			}
			return fmt.Errorf("%w: connection lost waiting for the stop job of %s", ErrUnavailable, name)
		case <-ctx.Done():
			return fmt.Errorf("scope: waiting for the stop job of %s: %w", name, ctx.Err())
		}
	}
}

// CgroupPath is the scope's cgroup (its ControlGroup property), e.g.
// /user.slice/user-1000.slice/user@1000.service/contextd.slice/contextd-safe_bash-1.scope,
// as it appears in /proc/<pid>/cgroup.
func (s *Scope) CgroupPath(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cgroup != "" {
		return s.cgroup, nil
	}
	cn, _, err := s.m.current(ctx)
	if err != nil {
		return "", err
	}
	p, err := cn.sd.GetUnitTypePropertyContext(ctx, s.name, "Scope", "ControlGroup")
	if err != nil {
		return "", fmt.Errorf("scope: reading ControlGroup of %s: %w", s.name, err)
	}
	cg, _ := p.Value.Value().(string)
	if cg == "" {
		return "", fmt.Errorf("scope: %s has no cgroup (not running)", s.name)
	}
	s.cgroup = cg
	return cg, nil
}

func isDBusError(err error, name string) bool {
	var e godbus.Error
	if errors.As(err, &e) {
		return e.Name == name
	}
	var pe *godbus.Error
	return errors.As(err, &pe) && pe.Name == name
}
