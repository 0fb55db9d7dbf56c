package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/sandbox"
)

// memorySearchCheck is doctor's line on memory search: lexical only, or
// lexical + dense through the configured embedding endpoint, which is then
// probed with one short text. It is never required: without dense vectors
// (or with the endpoint down) search is lexical, and calls still work.
// Without an endpoint configured, it makes no network call.
func memorySearchCheck(ctx context.Context, cfg *config.Config, cfgErr error) sandbox.Check {
	c := sandbox.Check{Layer: "memory search"}
	if cfgErr != nil {
		c.Detail, c.Fix = "the configuration did not load: "+cfgErr.Error(), "fix the configuration file (docs/config.md)"
		return c
	}
	e := embedding.FromConfig(cfg.Store)
	c.Detail = embedding.Describe(cfg.Store)
	if e == nil {
		c.OK = true
		return c
	}
	dims, took, err := e.Probe(ctx)
	if err != nil {
		c.Detail += ": the probe failed: " + strings.TrimPrefix(err.Error(), e.String()+": ")
		c.Fix = "until the endpoint answers, memories are stored and searched by their words only, with a warning; " +
			"check that it runs and serves the model, and [store] embed_* in the configuration (docs/config.md)"
		return c
	}
	c.OK = true
	c.Detail += fmt.Sprintf(": probe answered in %s, %d dimensions", took.Round(time.Millisecond), dims)
	return c
}
