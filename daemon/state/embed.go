package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/contextd/contextd/daemon/store"
)

// Embedder turns texts into dense vectors, one per text in order: package
// embed's Client. The memory tools use it only when Config.Embedder is set;
// it is never required, and its failures are warnings, not errors.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

func (c *Config) embedder() Embedder {
	if c == nil {
		return nil
	}
	return c.Embedder
}

// memoryText is what a memory's vector is computed from: the title and the
// description say what it is about and when it applies, the content how.
func memoryText(m *store.Memory) string {
	return m.Title + "\n" + m.Description + "\n" + m.Content
}

// embedMemory gives the stored memory m its dense vector. Every failure
// leaves m stored as it is, found by its words, and returns a warning that
// says so: the memory is what the agent asked to keep, the vector is extra.
func embedMemory(ctx context.Context, env *Env, e Embedder, st store.Store, m *store.Memory) (warnings []string) {
	if e == nil {
		return nil
	}
	vs, ok := st.(store.Vectors)
	if !ok {
		return warning(env, "memory_store: %s: this store keeps no vectors; search stays lexical", m.ID)
	}
	v, err := embedOne(ctx, e, memoryText(m))
	if err == nil {
		err = vs.SetMemoryVector(ctx, m.ID, m.Project, v)
	}
	if err != nil {
		return warning(env, "memory_store: %s is stored and found by its words, but has no dense vector: %v", m.ID, err)
	}
	return nil
}

// queryVector is the dense embedding of a memory_search query, or nil
// (with a warning) when the endpoint fails: the search is then lexical.
func queryVector(ctx context.Context, env *Env, e Embedder, query string) (_ []float32, warnings []string) {
	if e == nil {
		return nil, nil
	}
	// The query leaves the machine: send it scrubbed, as memories are stored.
	v, err := embedOne(ctx, e, scrubbed(env, query))
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, nil
		}
		return nil, warning(env, "memory_search: ranked by words only, the embedding endpoint failed: %v", err)
	}
	return v, nil
}

// embedOne embeds one text.
func embedOne(ctx context.Context, e Embedder, text string) ([]float32, error) {
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("the embedder returned %d vectors for 1 text", len(vs))
	}
	return vs[0], nil
}

// warning is one warning for the caller, scrubbed: it may quote an
// endpoint's answer.
func warning(env *Env, format string, a ...any) []string {
	return []string{scrubbed(env, fmt.Sprintf(format, a...))}
}
