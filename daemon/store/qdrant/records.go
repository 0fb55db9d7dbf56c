package qdrant

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"
)

// ListCheckpoints' limit when it is <= 0, and the most it returns.
const (
	defaultCheckpointLimit = 20
	maxListLimit           = 10000
)

// upsertRecord writes the point id of a collection without vectors
// (checkpoints, branches); it carries an empty map of vectors, not nothing
// (see the package comment).
func (s *Store) upsertRecord(ctx context.Context, op, collection, id string, p map[string]*qc.Value) error {
	return s.upsert(ctx, op, collection, &qc.PointStruct{
		Id:      pointID(id),
		Payload: p,
		Vectors: qc.NewVectorsMap(map[string]*qc.Vector{}),
	})
}

// PutCheckpoint stores c, setting c.ID when empty and c.Created when zero
// (a Created given is kept). Checkpoints are written once: an id already
// stored in c.Project fails with ErrConflict, one stored in another project
// with ErrNotFound. The server bounds the size of a request (Qdrant's
// service.max_request_size_mb), which bounds Full.
func (s *Store) PutCheckpoint(ctx context.Context, c *store.Checkpoint) error {
	next := *c
	if next.Created.IsZero() {
		next.Created = s.now()
	} else {
		next.Created = normTime(next.Created)
	}
	if next.ID == "" {
		next.ID = ids.New()
	} else {
		defer s.lockID(next.ID)()
		cur, err := s.getPoint(ctx, "put checkpoint", s.checkpoints, next.ID, false)
		if err != nil {
			return err
		}
		if cur != nil {
			if checkpointFrom(cur.GetPayload()).Project != next.Project {
				return errNotFound("checkpoint", next.ID)
			}
			return fmt.Errorf("qdrant store: put checkpoint %q: already stored, and checkpoints are not changed once written: %w",
				next.ID, store.ErrConflict)
		}
	}
	if err := s.upsertRecord(ctx, "put checkpoint", s.checkpoints, next.ID, checkpointPayload(&next)); err != nil {
		return err
	}
	*c = next
	return nil
}

// GetCheckpoint returns the checkpoint with id in project.
func (s *Store) GetCheckpoint(ctx context.Context, id, project string) (*store.Checkpoint, error) {
	return getOwned(ctx, s, "checkpoint", s.checkpoints, id, checkpointFrom,
		func(c *store.Checkpoint) bool { return c.ID == id && c.Project == project })
}

// ListCheckpoints returns project's checkpoints, newest first (by Created,
// through the integer index on it), at most limit (<= 0: 20), without Full:
// the payload selector leaves it on the server.
func (s *Store) ListCheckpoints(ctx context.Context, project string, limit int) ([]store.Checkpoint, error) {
	if limit <= 0 {
		limit = defaultCheckpointLimit
	}
	limit = min(limit, maxListLimit)
	req := &qc.ScrollPoints{
		CollectionName: s.checkpoints,
		Filter:         &qc.Filter{Must: []*qc.Condition{qc.NewMatchKeyword(keyProjectKey, projectKey(project))}},
		Limit:          qc.PtrOf(uint32(limit)),
		OrderBy:        &qc.OrderBy{Key: keyCreated, Direction: qc.Direction_Desc.Enum()},
		WithPayload:    qc.NewWithPayloadExclude(keyFull),
	}
	points, err := call(ctx, s, "list checkpoints", func(ctx context.Context) ([]*qc.RetrievedPoint, error) {
		return s.client.Scroll(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.Checkpoint, 0, len(points))
	for _, p := range points {
		out = append(out, checkpointFrom(p.GetPayload()))
	}
	// The server orders by Created; sorting again (stably, newest first,
	// then by id) only makes the order of equal times deterministic.
	slices.SortStableFunc(out, func(a, b store.Checkpoint) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// PutBranch inserts or replaces b, as PutMemory: the store sets ID (when
// empty), Created (at insert) and Version; a stored branch of another
// session is ErrNotFound, a stale non-zero Version ErrConflict.
func (s *Store) PutBranch(ctx context.Context, b *store.Branch) error {
	next := *b
	if next.ID != "" {
		defer s.lockID(next.ID)()
	}
	t := s.now()
	next.Closed = normTime(next.Closed)
	if next.ID == "" {
		if next.Version != 0 {
			return fmt.Errorf("qdrant store: put branch: version %d without an id: %w", next.Version, store.ErrConflict)
		}
		next.ID = ids.New()
		next.Created = t
	} else {
		cur, err := s.getPoint(ctx, "put branch", s.branches, next.ID, false)
		if err != nil {
			return err
		}
		var stored *base
		if cur != nil {
			old := branchFrom(cur.GetPayload())
			stored = &base{owner: old.Session, created: old.Created, version: old.Version}
		}
		if next.Created, next.Version, err = rebase("branch", next.ID, next.Session, next.Version, stored, t); err != nil {
			return err
		}
	}
	next.Version++
	if err := s.upsertRecord(ctx, "put branch", s.branches, next.ID, branchPayload(&next)); err != nil {
		return err
	}
	*b = next
	return nil
}

// GetBranch returns the branch with id of session.
func (s *Store) GetBranch(ctx context.Context, id, session string) (*store.Branch, error) {
	return getOwned(ctx, s, "branch", s.branches, id, branchFrom,
		func(b *store.Branch) bool { return b.ID == id && b.Session == session })
}

// getOwned returns the record of kind with id in collection, read from its
// payload with from, when mine says it is the caller's: a record of
// another project or session is not found, like a missing one.
func getOwned[T any](ctx context.Context, s *Store, kind, collection, id string, from func(payload) T, mine func(*T) bool) (*T, error) {
	p, err := s.getPoint(ctx, "get "+kind, collection, id, false)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errNotFound(kind, id)
	}
	r := from(p.GetPayload())
	if !mine(&r) {
		return nil, errNotFound(kind, id)
	}
	return &r, nil
}

// base is what a versioned put (PutMemory, PutBranch) writes over: the
// stored record's owner (its project or session), Created and Version.
type base struct {
	owner   string
	created time.Time
	version int64
}

// rebase checks a versioned put of kind with id, by owner, claiming
// Version claimed, against the stored record (nil when there is none),
// and returns the Created and Version the write goes on from: t and 0 for
// a new record. A non-zero claim must be the stored Version
// (ErrConflict); a record of another owner is not found.
func rebase(kind, id, owner string, claimed int64, stored *base, t time.Time) (time.Time, int64, error) {
	switch {
	case stored == nil && claimed != 0:
		return time.Time{}, 0, fmt.Errorf("qdrant store: put %s %q: version %d, none stored: %w", kind, id, claimed, store.ErrConflict)
	case stored == nil:
		return t, 0, nil
	case stored.owner != owner:
		return time.Time{}, 0, errNotFound(kind, id)
	case claimed != 0 && claimed != stored.version:
		return time.Time{}, 0, fmt.Errorf("qdrant store: put %s %q: version %d, stored %d: %w",
			kind, id, claimed, stored.version, store.ErrConflict)
	}
	return stored.created, stored.version, nil
}

// scrollPage is the page size of OpenBranches.
const scrollPage = 256

// OpenBranches returns session's open branches, outermost first: by Depth,
// then Created, then ID.
func (s *Store) OpenBranches(ctx context.Context, session string) ([]store.Branch, error) {
	filter := &qc.Filter{Must: []*qc.Condition{
		qc.NewMatchKeyword(keySessionKey, sessionKey(session)),
		qc.NewMatchBool(keyOpen, true),
	}}
	var out []store.Branch
	var offset *qc.PointId
	for {
		req := &qc.ScrollPoints{
			CollectionName: s.branches,
			Filter:         filter,
			Offset:         offset,
			Limit:          qc.PtrOf(uint32(scrollPage)),
			WithPayload:    qc.NewWithPayload(true),
		}
		type page struct {
			points []*qc.RetrievedPoint
			next   *qc.PointId
		}
		pg, err := call(ctx, s, "open branches", func(ctx context.Context) (page, error) {
			points, next, err := s.client.ScrollAndOffset(ctx, req)
			return page{points, next}, err
		})
		if err != nil {
			return nil, err
		}
		for _, p := range pg.points {
			out = append(out, branchFrom(p.GetPayload()))
		}
		if pg.next == nil || len(pg.points) == 0 {
			break
		}
		offset = pg.next
	}
	slices.SortFunc(out, func(a, b store.Branch) int {
		if c := cmp.Compare(a.Depth, b.Depth); c != 0 {
			return c
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}
