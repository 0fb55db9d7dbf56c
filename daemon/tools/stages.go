package tools

import "time"

// stageClock times the daemon's side of a call, one span per stage, for the
// debug log's "call stages" (where a call's time goes: issue 26).
type stageClock struct {
	t     time.Time
	spans []stageSpan
}

type stageSpan struct {
	name string
	ms   float64
}

// Mark ends the current stage, named name, and starts the next.
func (c *stageClock) Mark(name string) {
	now := time.Now()
	c.spans = append(c.spans, stageSpan{name, float64(now.Sub(c.t).Microseconds()) / 1000})
	c.t = now
}

// Add records a span timed elsewhere (work done beside the stages, in a
// goroutine), without ending the current stage.
func (c *stageClock) Add(name string, d time.Duration) {
	c.spans = append(c.spans, stageSpan{name, float64(d.Microseconds()) / 1000})
}

// into adds the spans to o's stages as "daemon_<name>" (milliseconds each).
func (c *stageClock) into(o *Outcome) {
	if o.Stages == nil {
		o.Stages = map[string]float64{}
	}
	for _, s := range c.spans {
		o.Stages["daemon_"+s.name] = s.ms
	}
}
