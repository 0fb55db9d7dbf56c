package daemon

import (
	"testing"

	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/state"
)

// The memory tools get an embedding client only when [store] embed_api is
// set: with the defaults there is none, so no embedding request can be made.
func TestRegistryEmbedder(t *testing.T) {
	embedderOf := func(cfg *config.Config, tool string) state.Embedder {
		tl, err := Registry(cfg).State.Get(tool)
		if err != nil {
			t.Fatal(err)
		}
		switch tl := tl.(type) {
		case state.MemoryStore:
			return tl.Config.Embedder
		case state.MemorySearch:
			return tl.Config.Embedder
		}
		t.Fatalf("%s is a %T", tool, tl)
		return nil
	}
	for _, tool := range []string{"memory_store", "memory_search"} {
		if e := embedderOf(config.Default(), tool); e != nil {
			t.Errorf("%s has an embedder with the default configuration: %v", tool, e)
		}
		cfg := config.Default()
		cfg.Store.EmbedAPI, cfg.Store.EmbedModel = "ollama", "nomic-embed-text"
		e, ok := embedderOf(cfg, tool).(*embedding.Client)
		if !ok || e == nil || e.Endpoint() != "http://localhost:11434/api/embed" {
			t.Errorf("%s with embed_api = \"ollama\": embedder %v", tool, e)
		}
	}
}
