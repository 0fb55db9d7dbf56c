package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/contextd/contextd/catalog"
)

// maxAuditLimit bounds GET /v1/audit's answer; defaultAuditLimit is its
// size when the query names none.
const (
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

func (s *Server) createCall(c echo.Context, req *CallRequest) (*CallResponse, error) {
	return s.runCall(c, func(out func([]byte) error) (CallResponse, error) {
		return s.core.Call(c.Request().Context(), *req, out)
	})
}

func (s *Server) stateCall(tool string) func(echo.Context, *StateCallRequest) (*CallResponse, error) {
	return func(c echo.Context, req *StateCallRequest) (*CallResponse, error) {
		cr := CallRequest{Tool: tool, Input: req.Input, Workspace: req.Workspace, Session: req.Session, MaxTokens: req.MaxTokens}
		return s.createCall(c, &cr)
	}
}

func (s *Server) getPage(c echo.Context, req *PageRequest) (*CallResponse, error) {
	return s.runCall(c, func(out func([]byte) error) (CallResponse, error) {
		return s.core.Page(c.Request().Context(), *req, out)
	})
}

// runCall answers a call: as one JSON value, or as a stream of events
// when the client accepts text/event-stream.
func (s *Server) runCall(c echo.Context, call func(out func([]byte) error) (CallResponse, error)) (*CallResponse, error) {
	if !acceptsStream(c.Request()) {
		resp, err := call(nil)
		if err != nil {
			return nil, err
		}
		return &resp, nil
	}
	st := &stream{c: c}
	resp, err := call(st.output)
	if err == nil {
		err = st.flushCarry()
	}
	switch {
	case err != nil && !st.started:
		return nil, err // the error handler answers with the problem's status
	case err != nil:
		return nil, st.event("problem", catalog.ToProblem(err))
	}
	resp.Output = ""
	return nil, st.event("result", resp)
}

// acceptsStream reports whether the client asks for server-sent events.
func acceptsStream(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for _, part := range strings.Split(a, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// hookNameRE is the shape of an automation's name (daemon/automation
// checks the same at load).
var hookNameRE = regexp.MustCompile(`^[a-z0-9-]{1,40}$`)

// hookReadTimeout bounds reading a webhook's body.
const hookReadTimeout = 30 * time.Second

func (s *Server) hook(c echo.Context) error {
	var req HookName
	if err := bindParams(c, &req); err != nil {
		return err
	}
	// A name no automation can have is answered before anything is
	// recorded: whoever reaches the hooks path, with no secret, must not
	// be able to write the audit log or the delivery record at will.
	if !hookNameRE.MatchString(req.Name) {
		return fmt.Errorf("no automation %q: %w", "…", catalog.ErrUnknownAutomation)
	}
	r := c.Request()
	body := func(max int64) ([]byte, error) {
		// A sender that feeds its body slowly holds a connection and a
		// goroutine: the body has hookReadTimeout to arrive.
		http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(hookReadTimeout))
		return io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, max))
	}
	acc, err := s.core.Hook(r.Context(), req.Name, r.Header, body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, acc)
}

func (s *Server) getCall(c echo.Context, req *CallID) (*CallRecord, error) {
	rec, err := s.core.Record(c.Request().Context(), req.ID)
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

func (s *Server) listTools(c echo.Context, _ *noRequest) (*ToolList, error) {
	ts, err := s.core.Tools(c.Request().Context())
	if err != nil {
		return nil, err
	}
	if ts == nil {
		ts = ToolList{}
	}
	return &ts, nil
}

func (s *Server) audit(c echo.Context, q *AuditQuery) (*AuditEntries, error) {
	switch {
	case q.Limit == 0:
		q.Limit = defaultAuditLimit
	case q.Limit < 0 || q.Limit > maxAuditLimit:
		return nil, fmt.Errorf("limit %d: from 1 to %d: %w", q.Limit, maxAuditLimit, catalog.ErrBadInput)
	}
	es, err := s.core.Audit(c.Request().Context(), *q)
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = AuditEntries{}
	}
	return &es, nil
}

func (s *Server) auditVerify(c echo.Context, _ *noRequest) (*AuditVerifyReply, error) {
	r, err := s.core.AuditVerify(c.Request().Context())
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func (s *Server) status(c echo.Context, _ *noRequest) (*StatusReply, error) {
	st, err := s.core.Status(c.Request().Context())
	if err != nil {
		return nil, err
	}
	return &st, nil
}

func (s *Server) openapi(c echo.Context, _ *noRequest) (*struct{}, error) {
	return nil, c.Blob(http.StatusOK, echo.MIMEApplicationJSON, s.doc)
}
