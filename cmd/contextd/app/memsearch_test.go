package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding/embedtest"
)

// The doctor's and status's line on memory search, for each configuration.
// The endpoint here is the protocol test server (embedtest), not a model.
func TestMemorySearchCheck(t *testing.T) {
	ctx := t.Context()
	cfg := config.Default()
	cfg.Store.Path = t.TempDir() + "/state.db"
	c := memorySearchCheck(ctx, cfg, nil)
	if !c.OK || c.Required || c.Layer != "memory search" || c.Detail != "lexical only (no embedding endpoint configured)" {
		t.Errorf("default configuration: %+v", c)
	}
	if n := storeState(cfg).Note; !strings.Contains(n, "memory search: lexical only (no embedding endpoint configured)") {
		t.Errorf("status note: %q", n)
	}

	srv := embedtest.New(t, "ollama", "nomic-embed-text", 768)
	cfg.Store.EmbedAPI, cfg.Store.EmbedURL, cfg.Store.EmbedModel = "ollama", srv.URL, "nomic-embed-text"
	want := "lexical + dense (ollama at " + srv.URL + ", model nomic-embed-text)"
	c = memorySearchCheck(ctx, cfg, nil)
	if !c.OK || c.Required || !strings.HasPrefix(c.Detail, want+": probe answered in ") || !strings.HasSuffix(c.Detail, ", 768 dimensions") {
		t.Errorf("configured endpoint: %+v", c)
	}
	if srv.Requests() != 1 {
		t.Errorf("the probe made %d requests", srv.Requests())
	}
	if n := storeState(cfg).Note; !strings.Contains(n, "memory search: "+want) || srv.Requests() != 1 {
		t.Errorf("status note %q (after %d requests: status does not probe)", n, srv.Requests())
	}

	srv.Close()
	c = memorySearchCheck(ctx, cfg, nil)
	if c.OK || c.Required || !strings.Contains(c.Detail, "the probe failed") || !strings.Contains(c.Detail, "connection refused") || c.Fix == "" {
		t.Errorf("endpoint down: %+v", c)
	}

	c = memorySearchCheck(ctx, nil, errors.New("config x: invalid configuration"))
	if c.OK || c.Required || !strings.Contains(c.Detail, "did not load") {
		t.Errorf("bad configuration: %+v", c)
	}
}
