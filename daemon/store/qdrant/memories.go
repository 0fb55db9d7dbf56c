package qdrant

import (
	"context"
	"fmt"
	"slices"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"
)

// defaultSearchLimit is MemoryQuery.Limit when it is <= 0.
const defaultSearchLimit = 3

// PutMemory inserts or replaces m; see store.Store. A stored memory with
// m.ID that belongs to another project is not touched: ErrNotFound. A
// non-zero Version with no memory stored under the id is stale like any
// other: ErrConflict. Optimistic locking is exact within this Store and best
// effort across processes: see the package comment.
//
// The dense vector a memory was given with SetMemoryVector is kept when the
// text it was computed from (title, description, content, tags) is
// unchanged, and dropped otherwise, since it would describe the old text.
func (s *Store) PutMemory(ctx context.Context, m *store.Memory) error {
	next := *m
	if next.ID != "" {
		defer s.lockID(next.ID)()
	}
	t := s.now() // under the lock, so that Updated follows the order of writes
	var dense []float32
	if next.ID == "" {
		if next.Version != 0 {
			return fmt.Errorf("qdrant store: put memory: version %d without an id: %w", next.Version, store.ErrConflict)
		}
		next.ID = ids.New()
		next.Created = t
	} else {
		cur, err := s.getPoint(ctx, "put memory", s.memories, next.ID, s.denseSize > 0)
		if err != nil {
			return err
		}
		var stored *base
		var old store.Memory
		if cur != nil {
			old = memoryFrom(cur.GetPayload())
			stored = &base{owner: old.Project, created: old.Created, version: old.Version}
		}
		if next.Created, next.Version, err = rebase("memory", next.ID, next.Project, next.Version, stored, t); err != nil {
			return err
		}
		if cur != nil && sameText(&old, &next) {
			dense = denseOf(cur.GetVectors())
		}
	}
	next.Version++
	next.Updated = t

	vectors := map[string]*qc.Vector{}
	if sv := EncodeDocument(next.Title, next.Description, next.Content, next.Tags); !sv.Empty() {
		vectors[vecText] = qc.NewVectorSparse(sv.Indices, sv.Values)
	}
	if len(dense) > 0 {
		vectors[vecDense] = qc.NewVectorDense(dense)
	}
	if err := s.upsert(ctx, "put memory", s.memories, &qc.PointStruct{
		Id:      pointID(next.ID),
		Payload: memoryPayload(&next),
		Vectors: qc.NewVectorsMap(vectors),
	}); err != nil {
		return err
	}
	*m = next
	return nil
}

func sameText(a, b *store.Memory) bool {
	return a.Title == b.Title && a.Description == b.Description && a.Content == b.Content &&
		slices.Equal(a.Tags, b.Tags)
}

func denseOf(v *qc.VectorsOutput) []float32 {
	return v.GetVectors().GetVectors()[vecDense].GetDenseVector().GetData()
}

// GetMemory returns the memory with id if it is in one of projects.
func (s *Store) GetMemory(ctx context.Context, id string, projects []string) (*store.Memory, error) {
	return getOwned(ctx, s, "memory", s.memories, id, memoryFrom,
		func(m *store.Memory) bool { return m.ID == id && slices.Contains(projects, m.Project) })
}

// memoryFilter selects the memories of q's projects that q admits. The
// bool is false when no project is asked for, so that nothing matches.
func memoryFilter(q store.MemoryQuery) (*qc.Filter, bool) {
	if len(q.Projects) == 0 {
		return nil, false
	}
	f := &qc.Filter{Must: []*qc.Condition{projectsCondition(q.Projects)}}
	if q.MinConfidence > 0 {
		f.Must = append(f.Must, qc.NewRange(keyConfidence, &qc.Range{Gte: qc.PtrOf(q.MinConfidence)}))
	}
	if !q.IncludeArchived {
		f.Must = append(f.Must, qc.NewMatchBool(keyArchived, false))
	}
	return f, true
}

func projectsCondition(projects []string) *qc.Condition {
	keys := make([]string, len(projects))
	for i, p := range projects {
		keys[i] = projectKey(p)
	}
	return qc.NewMatchKeywords(keyProjectKey, keys...)
}

// searchRequest builds the Query API request for q, or nil when q can
// match nothing (no project, or neither terms nor a usable vector).
//
// Lexical: the query's sparse vector against "text"; Qdrant applies IDF to
// the stored side. Dense: q.Vector against "dense", used only when the
// collection has that vector and q.Vector has its size (a vector of another
// size, from another embedding model, is ignored rather than failing the
// search). Both: each is a prefetch of prefetchLimit(limit) candidates,
// fused with reciprocal rank fusion. The filter is set on each prefetch and
// on the request.
func searchRequest(collection string, q store.MemoryQuery, denseSize int) *qc.QueryPoints {
	filter, ok := memoryFilter(q)
	if !ok {
		return nil
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	limit = min(limit, maxListLimit)
	sv := EncodeQuery(q.Text)
	useDense := denseSize > 0 && len(q.Vector) == denseSize
	req := &qc.QueryPoints{
		CollectionName: collection,
		Filter:         filter,
		Limit:          qc.PtrOf(uint64(limit)),
		WithPayload:    qc.NewWithPayload(true),
	}
	switch {
	case sv.Empty() && !useDense:
		return nil
	case !useDense:
		req.Query = qc.NewQuerySparse(sv.Indices, sv.Values)
		req.Using = qc.PtrOf(vecText)
	case sv.Empty():
		req.Query = qc.NewQueryDense(q.Vector)
		req.Using = qc.PtrOf(vecDense)
	default:
		n := qc.PtrOf(uint64(prefetchLimit(limit)))
		req.Prefetch = []*qc.PrefetchQuery{
			{Query: qc.NewQuerySparse(sv.Indices, sv.Values), Using: qc.PtrOf(vecText), Filter: filter, Limit: n},
			{Query: qc.NewQueryDense(q.Vector), Using: qc.PtrOf(vecDense), Filter: filter, Limit: n},
		}
		req.Query = qc.NewQueryFusion(qc.Fusion_RRF)
	}
	return req
}

// prefetchLimit is how many candidates each ranking hands to the fusion.
func prefetchLimit(limit int) int { return max(4*limit, 20) }

// SearchMemories ranks memories against q, best first. An empty answer is
// not an error. Scores are Qdrant's: the IDF-weighted dot product for a
// lexical search, cosine for a dense one, the RRF score when fused.
func (s *Store) SearchMemories(ctx context.Context, q store.MemoryQuery) ([]store.Hit, error) {
	req := searchRequest(s.memories, q, s.denseSize)
	if req == nil {
		return nil, nil
	}
	points, err := call(ctx, s, "search memories", func(ctx context.Context) ([]*qc.ScoredPoint, error) {
		return s.client.Query(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	hits := make([]store.Hit, 0, len(points))
	for _, p := range points {
		hits = append(hits, store.Hit{Memory: memoryFrom(p.GetPayload()), Score: float64(p.GetScore())})
	}
	return hits, nil
}

// CountMemories counts the memories of projects, archived included.
func (s *Store) CountMemories(ctx context.Context, projects []string) (int, error) {
	if len(projects) == 0 {
		return 0, nil
	}
	n, err := call(ctx, s, "count memories", func(ctx context.Context) (uint64, error) {
		return s.client.Count(ctx, &qc.CountPoints{
			CollectionName: s.memories,
			Filter:         &qc.Filter{Must: []*qc.Condition{projectsCondition(projects)}},
			Exact:          qc.PtrOf(true),
		})
	})
	return int(n), err
}

// DenseSize is the size of the memories' dense vector, 0 when the
// collection has none (then SearchMemories ignores MemoryQuery.Vector).
func (s *Store) DenseSize() int { return s.denseSize }

// SetMemoryVector stores v as the dense embedding of the memory with id in
// project, for hybrid search. It fails when the collection has no dense
// vector or v has another size. The memory itself (and its Version) is not
// changed; PutMemory drops the vector when the memory's text changes.
func (s *Store) SetMemoryVector(ctx context.Context, id, project string, v []float32) error {
	if s.denseSize == 0 {
		return fmt.Errorf("qdrant store: set memory vector: collection %s has no dense vector: it was created when no embedding endpoint answered; set another [store] collection_prefix, or delete the collection to have it made again", s.memories)
	}
	if len(v) != s.denseSize {
		return fmt.Errorf("qdrant store: set memory vector: %d dimensions, the collection has %d", len(v), s.denseSize)
	}
	defer s.lockID(id)()
	if _, err := s.GetMemory(ctx, id, []string{project}); err != nil {
		return err
	}
	_, err := call(ctx, s, "set memory vector", func(ctx context.Context) (*qc.UpdateResult, error) {
		return s.client.UpdateVectors(ctx, &qc.UpdatePointVectors{
			CollectionName: s.memories,
			Wait:           qc.PtrOf(true),
			Points: []*qc.PointVectors{{
				Id:      pointID(id),
				Vectors: qc.NewVectorsMap(map[string]*qc.Vector{vecDense: qc.NewVectorDense(v)}),
			}},
		})
	})
	return err
}

// getPoint reads one point with its payload (and its dense vector when
// withDense), or nil when there is none.
func (s *Store) getPoint(ctx context.Context, op, collection, id string, withDense bool) (*qc.RetrievedPoint, error) {
	req := &qc.GetPoints{
		CollectionName: collection,
		Ids:            []*qc.PointId{pointID(id)},
		WithPayload:    qc.NewWithPayload(true),
	}
	if withDense {
		req.WithVectors = qc.NewWithVectorsInclude(vecDense)
	}
	points, err := call(ctx, s, op, func(ctx context.Context) ([]*qc.RetrievedPoint, error) {
		return s.client.Get(ctx, req)
	})
	if err != nil || len(points) == 0 {
		return nil, err
	}
	return points[0], nil
}

// upsert writes one point and waits until Qdrant has it in its WAL.
func (s *Store) upsert(ctx context.Context, op, collection string, p *qc.PointStruct) error {
	_, err := call(ctx, s, op, func(ctx context.Context) (*qc.UpdateResult, error) {
		return s.client.Upsert(ctx, &qc.UpsertPoints{
			CollectionName: collection,
			Wait:           qc.PtrOf(true),
			Points:         []*qc.PointStruct{p},
		})
	})
	return err
}
