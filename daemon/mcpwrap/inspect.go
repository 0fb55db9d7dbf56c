package mcpwrap

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/wire/lite"
)

// inspector is one attached `contextd inspect`. Events go through a bounded
// queue to a writer goroutine, so that a slow terminal never stops a forward
// loop: an inspector that falls maxQueued events behind is disconnected.
type inspector struct {
	conn net.Conn
	q    chan lite.InspectEvent
	once sync.Once
	gone chan struct{}
}

const maxQueued = 4096

// send queues ev; the session's lock is held by the caller.
func (in *inspector) send(ev lite.InspectEvent) {
	select {
	case in.q <- ev:
	case <-in.gone:
	default:
		in.close() // too slow: let it reattach
	}
}

func (in *inspector) close() {
	in.once.Do(func() {
		close(in.gone)
		in.conn.Close()
	})
}

func (in *inspector) writer() {
	for {
		select {
		case ev := <-in.q:
			if err := lite.Write(in.conn, &ev); err != nil {
				in.close()
				return
			}
		case <-in.gone:
			return
		}
	}
}

// maxCommand bounds one inspector command (a modified message travels in one).
const maxCommand = 64 << 20

// Inspect attaches conn to the live session req names: Hello, the recent
// messages, then every new one; commands steer the session until either side
// closes.
func (w *Wrapper) Inspect(ctx context.Context, conn net.Conn, req *lite.Inspect) error {
	s, err := w.lookup(req.Record)
	if err != nil {
		lite.Write(conn, &lite.InspectEvent{Error: catalog.ToDetail(err)})
		return err
	}
	in := &inspector{conn: conn, q: make(chan lite.InspectEvent, maxQueued), gone: make(chan struct{})}
	on := s.engine.Intercepting()
	s.mu.Lock()
	in.q <- lite.InspectEvent{Hello: &lite.InspectHello{Record: s.rec.Session().ID, Server: s.name, Target: string(s.engine.Redact([]byte(s.target))), Intercept: on}}
	for i := range s.backlog {
		if len(in.q) == cap(in.q)-1 {
			break // the record has the rest
		}
		m := s.inspectMessage(&s.backlog[i])
		in.q <- lite.InspectEvent{Message: &m}
	}
	// Messages held right now are shown as held (they were sent to the
	// backlog before they were held, or are waiting for a rule).
	for _, h := range s.engine.Held() {
		raw := s.engine.Redact(h.Raw)
		m := lite.InspectMessage{Seq: h.Seq, Dir: h.Dir.String(), Time: h.Since, Kind: h.Kind.String(),
			ID: string(h.ID), Corr: h.Corr, Method: h.Method, Tool: h.Tool, Raw: jsonOrString(raw), Action: "held"}
		select {
		case in.q <- lite.InspectEvent{Message: &m}:
		default:
		}
	}
	s.inspectors[in] = true
	s.mu.Unlock()
	go in.writer()
	defer func() {
		s.mu.Lock()
		delete(s.inspectors, in)
		last := len(s.inspectors) == 0
		s.mu.Unlock()
		in.close()
		// Nobody is left to decide held messages: switching intercept
		// off forwards them, so neither side waits for a user who left.
		if last && s.engine.Intercepting() {
			s.log.Info("mcp inspect: last inspector left; intercept off, held messages forwarded")
			s.engine.SetIntercept(false, nil)
		}
	}()
	for {
		var cmd lite.InspectCommand
		if err := lite.Read(conn, &cmd, maxCommand); err != nil {
			return nil // the inspector left
		}
		if err := s.command(ctx, &cmd); err != nil {
			s.mu.Lock()
			in.send(lite.InspectEvent{Error: catalog.ToDetail(err)})
			s.mu.Unlock()
		}
	}
}

// command carries out one inspector command.
func (s *session) command(ctx context.Context, c *lite.InspectCommand) error {
	switch {
	case c.Intercept != nil:
		if err := s.engine.SetIntercept(*c.Intercept, nil); err != nil {
			return err
		}
		on := s.engine.Intercepting()
		s.log.Info("mcp inspect: intercept switched", "on", on)
		s.mu.Lock()
		for in := range s.inspectors {
			in.send(lite.InspectEvent{Intercept: &on})
		}
		s.mu.Unlock()
		return nil
	case c.Forward != 0:
		return s.engine.Forward(c.Forward)
	case c.Drop != 0:
		return s.engine.Drop(c.Drop)
	case c.Modify != nil:
		if !jsonValid(c.Modify.Raw) {
			return fmt.Errorf("modify %d: not one JSON value: %w", c.Modify.Seq, catalog.ErrBadInput)
		}
		return s.engine.Modify(c.Modify.Seq, c.Modify.Raw)
	case c.Replay != 0:
		return s.replay(ctx, c.Replay)
	}
	return fmt.Errorf("inspect: empty command: %w", catalog.ErrBadInput)
}
