package automation

import (
	"sync"
	"time"

	"github.com/contextd/contextd/daemon/config"
)

// Limiter is a token bucket: Count tokens at most, refilled evenly over
// Per. The caller passes the time, so a test drives it with a clock of its
// own. Safe for concurrent use.
type Limiter struct {
	mu     sync.Mutex
	rate   config.Rate
	tokens float64
	last   time.Time
}

// NewLimiter returns a full bucket.
func NewLimiter(r config.Rate) *Limiter {
	return &Limiter{rate: r, tokens: float64(r.Count)}
}

// Allow takes a token at now, or says how long until one is back. A clock
// that goes backwards refills nothing.
func (l *Limiter) Allow(now time.Time) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := float64(l.rate.Per) / float64(l.rate.Count) // nanoseconds a token takes
	if !l.last.IsZero() && now.After(l.last) {
		l.tokens = min(float64(l.rate.Count), l.tokens+float64(now.Sub(l.last))/per)
	}
	if l.last.IsZero() || now.After(l.last) {
		l.last = now
	}
	if l.tokens >= 1 {
		l.tokens--
		return true, 0
	}
	wait := time.Duration((1 - l.tokens) * per)
	if wait < time.Nanosecond {
		wait = time.Nanosecond
	}
	return false, wait
}
