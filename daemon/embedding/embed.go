// Package embedding is the client of an embedding endpoint (Ollama's /api/embed or an OpenAI-compatible /v1/embeddings) that gives memories dense vectors for search.
package embedding

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/catalog"
)

// APIs a Client speaks (the values of [store] embed_api).
const (
	Ollama = "ollama"
	OpenAI = "openai"
)

// Defaults of Options.
const (
	DefaultOllamaURL     = "http://localhost:11434"
	DefaultTimeout       = 5 * time.Second
	DefaultMaxInputBytes = 8 << 10
	DefaultBatch         = 16
	DefaultRetryAfter    = 15 * time.Second
)

// Bounds on what an endpoint may answer: a vector longer than maxDims or a
// body larger than maxBody is refused rather than held in memory.
const (
	maxDims = 1 << 16
	maxBody = 32 << 20
)

// Errors of Embed, wrapped together with a catalog class (errors.Is works
// with either).
var (
	// ErrUnreachable: no answer (connection refused, no route, DNS, TLS).
	ErrUnreachable = errors.New("embedding endpoint unreachable")
	// ErrTimeout: no answer within Options.Timeout.
	ErrTimeout = errors.New("embedding endpoint timed out")
	// ErrAuth: the endpoint refused the credentials (HTTP 401 or 403).
	ErrAuth = errors.New("embedding endpoint refused the credentials")
	// ErrStatus: any other non-2xx answer.
	ErrStatus = errors.New("embedding endpoint refused the request")
	// ErrResponse: a 2xx answer that is not the API's response shape, or
	// holds vectors that are unusable (empty, non-finite, a wrong count).
	ErrResponse = errors.New("malformed embedding response")
	// ErrDimension: vectors of another dimension than the ones before
	// (or than Options.Dimensions): the model behind the endpoint changed.
	ErrDimension = errors.New("embedding dimension changed")
)

// Options configure New. A nil *Options is not valid (API and Model are
// required); each zero field means the default given on it.
type Options struct {
	// API is Ollama or OpenAI. Required.
	API string
	// URL is the endpoint's base URL. Ollama: the path /api/embed is added
	// unless it ends with it; default DefaultOllamaURL. OpenAI: required;
	// /embeddings is added to a URL ending in /v1, /v1/embeddings to any
	// other, and a URL ending in /embeddings is used as it is.
	URL string
	// Model names the embedding model. Required.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer APIKey". It never
	// appears in an error. Default: none.
	APIKey string
	// Timeout bounds one request. Default: DefaultTimeout (5 s).
	Timeout time.Duration
	// MaxInputBytes: a longer text is cut to at most this many bytes, at a
	// word boundary near the end when there is one, so that one large
	// memory cannot make a huge request or overrun the model's context (a
	// memory's gist is at its start: title, description). Default:
	// DefaultMaxInputBytes (8 KiB, about 2,000 tokens).
	MaxInputBytes int
	// Batch is the most texts sent in one request. Default: DefaultBatch.
	Batch int
	// Dimensions, when > 0, is the dimension every vector must have.
	// Default: 0, the dimension of the first answer, kept from then on.
	Dimensions int
	// RetryAfter: after a failure to get an answer (unreachable, timeout,
	// HTTP 5xx or 429), calls within this long fail at once with that
	// error instead of each waiting for the endpoint again. Default:
	// DefaultRetryAfter (15 s); negative: always try.
	RetryAfter time.Duration
	// HTTPClient sends the requests. Default: a client of its own that
	// follows no redirect (an answer must come from the URL configured).
	HTTPClient *http.Client
}

// Client embeds texts through one endpoint. It is safe for concurrent use.
type Client struct {
	api, model, endpoint, display string
	key                           string
	timeout                       time.Duration
	maxInput, batch               int
	retryAfter                    time.Duration
	http                          *http.Client

	// broken, when set, is returned by every Embed: the configuration
	// could not make a working client (FromConfig).
	broken error

	mu      sync.Mutex
	dims    int       // 0 until known
	failed  error     // the last failure that holds calls back
	retryAt time.Time // until then, Embed returns failed
}

// New checks o and returns a Client. It makes no network call. Errors wrap
// catalog.ErrConfig.
func New(o *Options) (*Client, error) {
	if o == nil {
		return nil, fmt.Errorf("embed: no options (API and Model are required): %w", catalog.ErrConfig)
	}
	c := &Client{
		api: o.API, model: o.Model, key: o.APIKey,
		timeout: o.Timeout, maxInput: o.MaxInputBytes, batch: o.Batch,
		retryAfter: o.RetryAfter, dims: o.Dimensions, http: o.HTTPClient,
	}
	if c.model == "" {
		return nil, fmt.Errorf("embed: no model: %w", catalog.ErrConfig)
	}
	if c.dims < 0 || c.dims > maxDims {
		return nil, fmt.Errorf("embed: Dimensions %d out of range: %w", c.dims, catalog.ErrConfig)
	}
	base := o.URL
	switch c.api {
	case Ollama:
		if base == "" {
			base = DefaultOllamaURL
		}
	case OpenAI:
		if base == "" {
			return nil, fmt.Errorf("embed: the openai API needs a URL: %w", catalog.ErrConfig)
		}
	default:
		return nil, fmt.Errorf("embed: API %q: must be %q or %q: %w", c.api, Ollama, OpenAI, catalog.ErrConfig)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embed: URL %q is not an http(s) URL: %w", redactURL(base), catalog.ErrConfig)
	}
	if u.User != nil {
		return nil, fmt.Errorf("embed: URL %q holds credentials; pass the key as APIKey: %w", redactURL(base), catalog.ErrConfig)
	}
	c.endpoint = endpoint(c.api, u)
	c.display = strings.TrimSuffix(u.String(), "/")
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxInput <= 0 {
		c.maxInput = DefaultMaxInputBytes
	}
	if c.batch <= 0 {
		c.batch = DefaultBatch
	}
	if c.retryAfter == 0 {
		c.retryAfter = DefaultRetryAfter
	}
	if c.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		c.http = &http.Client{
			Transport:     tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return c, nil
}

// endpoint is the URL requests go to, from the base URL u (see Options.URL).
func endpoint(api string, u *url.URL) string {
	e := *u
	p := strings.TrimSuffix(e.Path, "/")
	switch api {
	case Ollama:
		if !strings.HasSuffix(p, "/api/embed") {
			p += "/api/embed"
		}
	case OpenAI:
		switch {
		case strings.HasSuffix(p, "/embeddings"):
		case strings.HasSuffix(p, "/v1"):
			p += "/embeddings"
		default:
			p += "/v1/embeddings"
		}
	}
	e.Path, e.RawPath = p, ""
	return e.String()
}

// String says which endpoint and model: "ollama at http://localhost:11434,
// model nomic-embed-text".
func (c *Client) String() string {
	return fmt.Sprintf("%s at %s, model %s", c.api, c.display, c.model)
}

// Endpoint is the URL requests are sent to.
func (c *Client) Endpoint() string { return c.endpoint }

// Dimensions is the dimension of the vectors, 0 before the first answer
// (unless Options.Dimensions set it).
func (c *Client) Dimensions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dims
}

// Embed returns one vector per text, in order. Texts are cut to
// Options.MaxInputBytes and sent Options.Batch at a time; the first failure
// fails the whole call. Errors wrap one of this package's errors and a
// catalog class: catalog.ErrConfig for what the configuration must fix
// (credentials, a URL or model the endpoint does not know),
// catalog.ErrInterrupted when ctx ended, catalog.ErrStoreUnavailable
// otherwise. No error holds the API key.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if c.broken != nil {
		return nil, c.broken
	}
	if len(texts) == 0 {
		return nil, nil
	}
	if err := c.held(); err != nil {
		return nil, err
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.batch {
		batch := texts[start:min(start+c.batch, len(texts))]
		in := make([]string, len(batch))
		for i, t := range batch {
			in[i] = Truncate(t, c.maxInput)
		}
		vs, err := c.post(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	return out, nil
}

// held returns the failure calls are held back by, if it is recent.
func (c *Client) held() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil || !time.Now().Before(c.retryAt) {
		return nil
	}
	return fmt.Errorf("%w (not retried for %s after it)", c.failed, time.Until(c.retryAt).Round(time.Second))
}

// hold makes calls fail at once with err for RetryAfter: an endpoint that
// did not answer would otherwise cost every memory call its full timeout.
func (c *Client) hold(err error) {
	if c.retryAfter < 0 {
		return
	}
	c.mu.Lock()
	c.failed, c.retryAt = err, time.Now().Add(c.retryAfter)
	c.mu.Unlock()
}

// post sends one batch and returns its vectors.
func (c *Client) post(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := encodeRequest(c.model, texts)
	if err != nil {
		return nil, c.fail(ErrResponse, catalog.ErrInternal, "encode the request: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(ErrUnreachable, catalog.ErrConfig, "request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			// The caller gave up: that says nothing about the endpoint.
			return nil, c.fail(ctx.Err(), catalog.ErrInterrupted, "canceled")
		case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
			return nil, c.backoff(c.fail(ErrTimeout, catalog.ErrStoreUnavailable, "no answer within %s", c.timeout))
		}
		return nil, c.backoff(c.fail(ErrUnreachable, catalog.ErrStoreUnavailable, "%v", transportError(err)))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, c.fail(ctx.Err(), catalog.ErrInterrupted, "canceled")
		}
		if rctx.Err() != nil {
			return nil, c.backoff(c.fail(ErrTimeout, catalog.ErrStoreUnavailable, "the answer did not arrive within %s", c.timeout))
		}
		return nil, c.backoff(c.fail(ErrUnreachable, catalog.ErrStoreUnavailable, "reading the answer: %v", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(resp.StatusCode, raw)
	}
	if len(raw) > maxBody {
		return nil, c.fail(ErrResponse, catalog.ErrStoreUnavailable, "the answer is larger than %d MiB", maxBody>>20)
	}
	var vs [][]float32
	if c.api == Ollama {
		vs, err = ParseOllama(raw, len(texts))
	} else {
		vs, err = ParseOpenAI(raw, len(texts))
	}
	if err != nil {
		return nil, c.fail(ErrResponse, catalog.ErrStoreUnavailable, "%v", err)
	}
	if err := c.checkDims(len(vs[0])); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.failed = nil
	c.mu.Unlock()
	return vs, nil
}

// backoff holds calls back after err (see Options.RetryAfter) and returns it.
func (c *Client) backoff(err error) error {
	c.hold(err)
	return err
}

// checkDims pins the dimension on the first answer and refuses another.
func (c *Client) checkDims(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dims == 0:
		c.dims = n
	case c.dims != n:
		return c.fail(ErrDimension, catalog.ErrStoreUnavailable,
			"the endpoint returned %d-dimension vectors, %d before: did the model behind it change? restart contextd to use the new one "+
				"(memories embedded by the old model are then found by their words until stored again)", n, c.dims)
	}
	return nil
}

// statusError turns a non-2xx answer into an error: the endpoint's own
// message where it gives one (never for 401/403, whose message may quote
// part of the key), the status, and what to check.
func (c *Client) statusError(code int, body []byte) error {
	status := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		hint := "check the key in the variable store.embed_api_key_env names"
		if c.key == "" {
			hint = "the endpoint wants a key: name the variable holding it in store.embed_api_key_env"
		}
		return c.fail(ErrAuth, catalog.ErrConfig, "%s; %s", status, hint)
	case code == http.StatusNotFound:
		return c.fail(ErrStatus, catalog.ErrConfig, "%s%s; check store.embed_url (requests go to %s) and that the model %q is available there",
			status, c.serverMessage(body), c.endpoint, c.model)
	case code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout:
		return c.backoff(c.fail(ErrStatus, catalog.ErrStoreUnavailable, "%s%s", status, c.serverMessage(body)))
	case code >= 300 && code < 400:
		return c.fail(ErrStatus, catalog.ErrConfig, "%s (redirects are not followed); set store.embed_url to the final URL", status)
	}
	return c.fail(ErrStatus, catalog.ErrStoreUnavailable, "%s%s", status, c.serverMessage(body))
}

// serverMessage is the error message of an error body, in either API's
// shape ({"error": "..."} or {"error": {"message": "..."}}) or as plain
// text, one line, short, without the key: ": message", or "".
func (c *Client) serverMessage(body []byte) string {
	msg := errorMessage(body)
	if msg == "" {
		return ""
	}
	return ": " + c.redact(msg)
}

// fail builds an Embed error: what went wrong and the sentinel in its
// text, and the catalog class wrapped but not in the text: the classes
// closest to an endpoint's failure are named for the state store or the
// configuration file, which would mislead in a warning.
func (c *Client) fail(sentinel, class error, format string, a ...any) error {
	msg := fmt.Sprintf("%s: %s: %v", c.String(), c.redact(fmt.Sprintf(format, a...)), sentinel)
	return &classed{msg: msg, errs: []error{sentinel, class}}
}

// classed is an error whose text is msg and that wraps every one of errs.
type classed struct {
	msg  string
	errs []error
}

func (e *classed) Error() string   { return e.msg }
func (e *classed) Unwrap() []error { return e.errs }

// redact removes the API key from s. Errors are built from the endpoint's
// answers and the transport's messages, which could quote a header.
func (c *Client) redact(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[API key]")
}

// isTimeout reports a transport timeout (a net.Error that says so).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// transportError is err without the *url.Error wrapper's "Post URL:"
// prefix, which repeats what the message already says.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL hides a password in a URL that is shown in an error.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// Truncate cuts s to at most maxBytes bytes of valid UTF-8. When it must
// cut, it cuts at the last white space in the final eighth of the limit
// (so a word is not split), else at a character boundary. Invalid UTF-8 is
// replaced first, since endpoints refuse it.
func Truncate(s string, maxBytes int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if maxBytes <= 0 || len(s) <= maxBytes {
		return s
	}
	cut := maxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexFunc(s[:cut], unicode.IsSpace); i >= 0 && i >= cut-cut/8 {
		return strings.TrimRightFunc(s[:i], unicode.IsSpace)
	}
	return s[:cut]
}
