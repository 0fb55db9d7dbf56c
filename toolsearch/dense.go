package toolsearch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Embedder turns texts into vectors, one per text in order. query says the
// texts are search queries rather than documents, for models that embed
// the two differently.
type Embedder func(ctx context.Context, texts []string, query bool) ([][]float32, error)

const (
	// rrfK is reciprocal-rank fusion's constant: a tool's fused score is
	// 1/(rrfK+lexical rank) + 1/(rrfK+dense rank).
	rrfK = 60
	// queryTimeout bounds the query's embedding: past it the search
	// answers with the lexical ranking alone.
	queryTimeout = 300 * time.Millisecond
)

// errVectors is an embedder's answer that does not fit its question.
var errVectors = errors.New("embedder answered with the wrong number of vectors")

// denseCache holds the tools' vectors by the sha256 of the text embedded,
// so that a rebuilt index embeds only tools whose text changed.
type denseCache struct {
	mu   sync.Mutex
	vecs map[[32]byte][]float32
}

// docText is what a tool's vector is made from.
func docText(d Doc) string {
	var b strings.Builder
	b.WriteString(d.ID())
	if d.Title != "" {
		b.WriteString(" — " + d.Title)
	}
	b.WriteString(": " + d.Description)
	if len(d.Params) > 0 {
		names := make([]string, len(d.Params))
		for i, p := range d.Params {
			names[i] = p.Name
		}
		b.WriteString(" (" + strings.Join(names, ", ") + ")")
	}
	return b.String()
}

// docVectors returns every tool's normalised vector, embedding in one batch
// those the cache lacks and dropping the ones no tool has any more.
func (ix *Index) docVectors(ctx context.Context, e Embedder) ([][]float32, error) {
	c := &ix.dense
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([][32]byte, len(ix.docs))
	var missing []string
	var missingKeys [][32]byte
	want := map[[32]byte]bool{}
	for i, d := range ix.docs {
		text := docText(d)
		keys[i] = sha256.Sum256([]byte(text))
		if _, ok := c.vecs[keys[i]]; !ok && !want[keys[i]] {
			missing = append(missing, text)
			missingKeys = append(missingKeys, keys[i])
		}
		want[keys[i]] = true
	}
	if len(missing) > 0 {
		vs, err := embed(ctx, e, missing, false)
		if err != nil {
			return nil, err
		}
		if len(vs) != len(missing) {
			return nil, fmt.Errorf("%w: %d for %d tools", errVectors, len(vs), len(missing))
		}
		if c.vecs == nil {
			c.vecs = map[[32]byte][]float32{}
		}
		for i, v := range vs {
			c.vecs[missingKeys[i]] = normalize(v)
		}
	}
	for k := range c.vecs {
		if !want[k] {
			delete(c.vecs, k)
		}
	}
	out := make([][]float32, len(keys))
	for i, k := range keys {
		out[i] = c.vecs[k]
	}
	return out, nil
}

// SearchContext is Search fused with the embedder's ranking when e is not
// nil: reciprocal-rank fusion of the lexical and the cosine rank, with the
// exact and prefix name tiers kept above it. The tools' vectors are made in
// one batch at the first search after Build or ReplaceServer (under ctx),
// and the query's under ctx and a 300 ms bound; when either fails the
// answer is the lexical ranking and note says "dense: unavailable (why)".
// Concurrent SearchContext calls are safe with each other, not with
// ReplaceServer.
func (ix *Index) SearchContext(ctx context.Context, q string, k int, e Embedder) (hits []Hit, note string) {
	qts, units := parseQuery(q)
	lexical := ix.rank(q, qts, units)
	if e == nil || strings.TrimSpace(q) == "" || len(ix.docs) == 0 {
		return ix.finish(lexical, qts, k), ""
	}
	dense, err := ix.denseRank(ctx, q, e)
	if err != nil {
		return ix.finish(lexical, qts, k), "dense: unavailable (" + err.Error() + ")"
	}
	return ix.fuse(lexical, dense, qts, k), ""
}

// denseRank orders every tool by cosine similarity to the query.
func (ix *Index) denseRank(ctx context.Context, q string, e Embedder) ([]int, error) {
	docs, err := ix.docVectors(ctx, e)
	if err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	qv, err := embed(qctx, e, []string{q}, true)
	if err != nil {
		return nil, err
	}
	if len(qv) != 1 {
		return nil, fmt.Errorf("%w: %d for one query", errVectors, len(qv))
	}
	v := normalize(qv[0])
	sim := make([]float64, len(docs))
	order := make([]int, len(docs))
	for i, d := range docs {
		order[i] = i
		sim[i] = dot(v, d)
	}
	sort.SliceStable(order, func(a, b int) bool { return sim[order[a]] > sim[order[b]] })
	return order, nil
}

// fuse ranks the tools by reciprocal-rank fusion of the lexical hits and
// the dense order; the name tiers stay first, in their own order.
func (ix *Index) fuse(lexical []Hit, dense []int, qts []qterm, k int) []Hit {
	lexical = top(lexical, -1)
	var tiers []Hit
	fused := map[string]float64{}
	lexRank := 0
	for _, h := range lexical {
		if len(h.Why) > 0 {
			tiers = append(tiers, h)
			continue
		}
		lexRank++
		fused[h.ID] += 1 / float64(rrfK+lexRank)
	}
	inTier := map[string]bool{}
	for _, h := range tiers {
		inTier[h.ID] = true
	}
	denseRank := 0
	for _, i := range dense {
		id := ix.docs[i].ID()
		if inTier[id] {
			continue
		}
		denseRank++
		fused[id] += 1 / float64(rrfK+denseRank)
	}
	rest := make([]Hit, 0, len(fused))
	for id, s := range fused {
		rest = append(rest, Hit{ID: id, Score: s})
	}
	rest = top(rest, max(k-len(tiers), 0))
	out := ix.finish(tiers, qts, k)
	for _, h := range ix.finish(rest, qts, k) {
		if len(h.Why) > 2 {
			h.Why = h.Why[:2]
		}
		h.Why = append(h.Why, "dense")
		out = append(out, h)
	}
	if k >= 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

// embed calls e and waits no longer than ctx, whether or not e heeds it.
func embed(ctx context.Context, e Embedder, texts []string, query bool) ([][]float32, error) {
	type answer struct {
		vs  [][]float32
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		vs, err := e(ctx, texts, query)
		ch <- answer{vs, err}
	}()
	select {
	case a := <-ch:
		return a.vs, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if n == 0 {
		return out
	}
	inv := 1 / math.Sqrt(n)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// dot is the cosine of two normalised vectors; a length mismatch (a model
// change mid-cache) compares the common part.
func dot(a, b []float32) float64 {
	s := 0.0
	for i := range min(len(a), len(b)) {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}
