package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/contextd/contextd/catalog"
)

// DefaultMaxBody bounds a request's body when Options leave it unset.
const DefaultMaxBody = 1 << 20

// Options configure a Server. Zero fields take the default they name.
type Options struct {
	// Version is the daemon's, the document's info.version. Default "dev".
	Version string
	// MaxBodyBytes bounds a request's body. Default DefaultMaxBody.
	MaxBodyBytes int64
	// Wrap puts middleware in front of the API (the guard of Host, Origin
	// and token); nil: none.
	Wrap func(http.Handler) http.Handler
	// ConnContext derives each connection's context (the daemon puts the
	// peer's credentials there); nil: the server's.
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// Logger gets what the server cannot tell a client. Default:
	// slog.Default().
	Logger *slog.Logger
}

// Server serves the API on any number of listeners.
type Server struct {
	core   Core
	opts   Options
	e      *echo.Echo
	routes []route
	doc    []byte
	srv    *http.Server
}

// New builds the API over core: its routes and its document. core may be
// nil for a server that is only asked for its document.
func New(core Core, o Options) (*Server, error) {
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBody
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Server{core: core, opts: o, e: echo.New()}
	s.e.HideBanner, s.e.HidePort = true, true
	s.e.HTTPErrorHandler = s.answerError
	s.routes = s.table()
	for _, r := range s.routes {
		s.e.Add(r.method, echoPath(r.path), r.handle)
	}
	doc, err := document(s.routes, o.Version)
	if err != nil {
		return nil, err
	}
	s.doc = doc
	var h http.Handler = s.e
	if o.Wrap != nil {
		h = o.Wrap(h)
	}
	// No write timeout: a streamed call's answer lasts as long as the call.
	// An idle keep-alive connection is closed after IdleTimeout: many held
	// open would exhaust the daemon's descriptors, its main socket's too.
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10,
		ConnContext: o.ConnContext, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelDebug)}
	return s, nil
}

// Handler is the API with the middleware Options.Wrap installed.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Document is the OpenAPI document, as GET /v1/openapi.json answers it.
func (s *Server) Document() []byte { return s.doc }

// Serve answers on ln until Shutdown; it returns nil then.
func (s *Server) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting and waits for the requests in flight (streamed
// calls included) until ctx ends; then it closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return err
}

// Close cuts every connection at once, a Shutdown waiting among them.
func (s *Server) Close() error { return s.srv.Close() }

// answerError is Echo's error handler: every error, the router's and the
// handlers', becomes problem+json through the catalog.
func (s *Server) answerError(err error, c echo.Context) {
	if c.Response().Committed {
		s.opts.Logger.Debug("http: error after the answer started", "path", c.Path(), "err", err)
		return
	}
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		// Whole seconds, rounded up: a client that waits that long finds
		// a token back.
		c.Response().Header().Set("Retry-After", strconv.FormatInt(int64((ra.RetryAfter()+time.Second-1)/time.Second), 10))
	}
	p := catalog.ToProblem(classify(err))
	b, merr := json.Marshal(p)
	if merr != nil {
		b = []byte(`{"title":"internal error","status":500}`)
	}
	if err := c.Blob(p.Status, catalog.ProblemType, b); err != nil {
		s.opts.Logger.Debug("http: problem not delivered", "err", err)
	}
}

// classify gives the router's and the body reader's errors their class;
// the handlers' errors have theirs already.
func classify(err error) error {
	var he *echo.HTTPError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return fmt.Errorf("the body is over %d bytes: %w", mb.Limit, catalog.ErrBodyTooLarge)
	case errors.As(err, &he) && (he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed):
		return fmt.Errorf("%v: %w", he.Message, catalog.ErrUnknownEndpoint)
	case errors.As(err, &he) && he.Code == http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%v: %w", he.Message, catalog.ErrBodyTooLarge)
	case errors.As(err, &he) && he.Code < 500:
		return fmt.Errorf("%v: %w", he.Message, catalog.ErrBadInput)
	}
	return err
}

// decodeBody reads the request's JSON body into v: one value, no member v
// does not have, at most max bytes.
func decodeBody(c echo.Context, v any, max int64) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, max)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return fmt.Errorf("request body: %v: %w", err, catalog.ErrBadInput)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("request body: more than one JSON value: %w", catalog.ErrBadInput)
	}
	return nil
}

// bindParams fills v's fields tagged path:"…" and query:"…" from the
// request: strings, ints and RFC 3339 times. A query parameter v has no
// field for is refused, as an unknown member of a body is.
func bindParams(c echo.Context, v any) error {
	rv := reflect.ValueOf(v).Elem()
	rt := rv.Type()
	known := map[string]bool{}
	for i := range rt.NumField() {
		f := rt.Field(i)
		var raw string
		var present bool
		switch {
		case f.Tag.Get("path") != "":
			raw, present = c.Param(f.Tag.Get("path")), true
		case f.Tag.Get("query") != "":
			name := f.Tag.Get("query")
			known[name] = true
			raw = c.QueryParam(name)
			present = c.QueryParams().Has(name)
		default:
			continue
		}
		if !present {
			continue
		}
		if err := setParam(rv.Field(i), raw); err != nil {
			return fmt.Errorf("parameter %s=%q: %v: %w", f.Name, raw, err, catalog.ErrBadInput)
		}
	}
	for name := range c.QueryParams() {
		if !known[name] {
			return fmt.Errorf("unknown query parameter %q: %w", name, catalog.ErrBadInput)
		}
	}
	return nil
}

func setParam(f reflect.Value, raw string) error {
	switch f.Interface().(type) {
	case string:
		f.SetString(raw)
	case int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return err
		}
		f.SetInt(int64(n))
	case time.Time:
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(t))
	default:
		return fmt.Errorf("no parser for %s", f.Type())
	}
	return nil
}
