package embedding

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

// FromConfig returns the client [store] configures, or nil when embed_api
// is empty: then nothing is created and no network call can happen. A
// configuration that cannot make a working client (the variable
// embed_api_key_env names is not set) still gives a Client, whose every
// Embed fails with the reason (wrapping catalog.ErrConfig): memory calls
// then say why in a warning and stay lexical, and doctor reports it.
func FromConfig(s config.Store) *Client {
	if s.EmbedAPI == config.EmbedNone {
		return nil
	}
	o := &Options{API: s.EmbedAPI, URL: s.EmbedURL, Model: s.EmbedModel, Timeout: s.EmbedTimeout.Duration}
	var why error
	if s.EmbedAPIKeyEnv != "" {
		o.APIKey = os.Getenv(s.EmbedAPIKeyEnv)
		if o.APIKey == "" {
			// Read by the daemon, and by doctor and status in the user's
			// shell: the fix is the daemon's environment either way.
			why = fmt.Errorf("store.embed_api_key_env names %s, which is not set in this process's environment "+
				"(the daemon reads the user manager's: `systemctl --user set-environment %s=...` or an Environment= drop-in): %w",
				s.EmbedAPIKeyEnv, s.EmbedAPIKeyEnv, catalog.ErrConfig)
		}
	}
	c, err := New(o)
	if err != nil {
		// Parse validated these keys; a Config built in code may not be.
		return &Client{api: s.EmbedAPI, model: s.EmbedModel, display: redactURL(s.EmbedURL), broken: err}
	}
	if why != nil {
		c.broken = fmt.Errorf("%s: %w", c.String(), why)
	}
	return c
}

// Describe says how memory search ranks with this configuration, for
// `contextd doctor` and `contextd status`, without a network call:
// "lexical only (no embedding endpoint configured)" or "lexical + dense
// (ollama at URL, model M)".
func Describe(s config.Store) string {
	c := FromConfig(s)
	if c == nil {
		return "lexical only (no embedding endpoint configured)"
	}
	return "lexical + dense (" + c.String() + ")"
}

// ProbeTimeout bounds Probe when the configured timeout is longer.
const ProbeTimeout = 3 * time.Second

// Probe embeds one short text, within the configured timeout or
// ProbeTimeout, whichever is shorter, and returns the vectors' dimension
// and how long the answer took.
func (c *Client) Probe(ctx context.Context) (dims int, took time.Duration, err error) {
	if c.broken != nil {
		return 0, 0, c.broken
	}
	limit := min(c.timeout, ProbeTimeout)
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	vs, err := c.Embed(pctx, []string{"contextd probe: is this endpoint an embedding model?"})
	took = time.Since(start)
	if err != nil {
		if ctx.Err() == nil && pctx.Err() != nil {
			// The probe's own bound, not the caller's: the endpoint is slow.
			return 0, took, c.fail(ErrTimeout, catalog.ErrStoreUnavailable, "no answer within %s", limit)
		}
		return 0, took, err
	}
	return len(vs[0]), took, nil
}
