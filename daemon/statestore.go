package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/embedding"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/qdrant"
	"github.com/contextd/contextd/daemon/store/sqlite"
)

// stateOpenTimeout bounds opening the store (a Qdrant server that does not
// answer).
const stateOpenTimeout = 10 * time.Second

// stateStore is the store of memories, checkpoints and branches, opened once
// in the background when the daemon starts (so that the first call does not
// wait for it) and kept until the daemon exits. A store that failed to open
// is retried on the next call that needs it, no more than every few seconds:
// a Qdrant server may come back.
type stateStore struct {
	cfg config.Store

	mu    sync.Mutex // guards the fields below; held while opening
	st    store.Store
	err   error
	tried time.Time // the last attempt; zero before the first
}

const stateRetry = 5 * time.Second

// get returns the open store, opening it if needed.
func (ss *stateStore) get(ctx context.Context) (store.Store, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != nil {
		return ss.st, nil
	}
	if !ss.tried.IsZero() && time.Since(ss.tried) < stateRetry {
		return nil, ss.err
	}
	ss.tried = time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stateOpenTimeout)
	defer cancel()
	ss.st, ss.err = openStore(ctx, ss.cfg)
	return ss.st, ss.err
}

func (ss *stateStore) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.st != nil {
		ss.st.Close()
		ss.st = nil
	}
}

// openStore opens the configured backend. Errors wrap
// catalog.ErrStoreUnavailable and say what to check.
func openStore(ctx context.Context, c config.Store) (store.Store, error) {
	switch c.Backend {
	case "qdrant":
		o := &qdrant.Options{Host: c.QdrantHost, Port: c.QdrantPort, UseTLS: c.QdrantTLS, CollectionPrefix: c.CollectionPrefix}
		if c.QdrantAPIKeyEnv != "" {
			o.APIKey = os.Getenv(c.QdrantAPIKeyEnv)
			if o.APIKey == "" {
				return nil, fmt.Errorf("store.qdrant_api_key_env names %s, which is not set in the daemon's environment: %w", c.QdrantAPIKeyEnv, catalog.ErrStoreUnavailable)
			}
		}
		// A new collection needs the embedding's dimension to hold dense
		// vectors; an existing one keeps its own (DenseSize 0 accepts it).
		if e := embedding.FromConfig(c); e != nil {
			if dims, _, err := e.Probe(ctx); err == nil {
				o.DenseSize = dims
			}
		}
		st, err := qdrant.Open(ctx, o)
		if err != nil && o.DenseSize > 0 && !errors.Is(err, store.ErrUnavailable) {
			// The collection was made for another model's dimension: open
			// it anyway; memories then warn that their vectors do not fit.
			o.DenseSize = 0
			st, err = qdrant.Open(ctx, o)
		}
		if err != nil {
			return nil, fmt.Errorf("qdrant store at %s:%d: %v: %w", c.QdrantHost, c.QdrantPort, err, catalog.ErrStoreUnavailable)
		}
		return st, nil
	default:
		st, err := sqlite.Open(&sqlite.Options{Path: c.Path})
		if err != nil {
			return nil, fmt.Errorf("sqlite store: %v: %w", err, catalog.ErrStoreUnavailable)
		}
		return st, nil
	}
}

// stateStore returns the daemon's store of state, or why there is none.
func (s *service) stateStore(ctx context.Context) (store.Store, error) {
	return s.state.get(ctx)
}
