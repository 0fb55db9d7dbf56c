package cachelayer

// SetOnWait sets the hook Acquire calls when it starts waiting for an
// ending lease.
func SetOnWait(m *Manager, f func()) { m.onWait = f }
