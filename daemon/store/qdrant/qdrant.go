// Package qdrant is the store.Store backend on a Qdrant server, reached over gRPC with the official client.
package qdrant

// Layout. Three collections, named CollectionPrefix + "memories",
// "checkpoints" and "branches", are created when missing by Open, with the
// payload indexes the queries filter and sort on. Every record is one point
// whose payload holds every field of the record (times as Unix nanoseconds,
// 0 for the zero time).
//
// Point ids. Qdrant takes only unsigned integers and UUIDs as point ids. An
// id in the canonical lower-case UUID form (all the ids this store assigns)
// is the point id itself; any other string is mapped to a name-based UUID
// (SHA-1, RFC 9562 version 5 layout) and kept verbatim in the payload, which
// is where ids are read back from.
//
// Scopes. Project and session are filtered through the payload keys
// "project_key" and "session_key", which hold the value behind a fixed
// prefix ("p:", "s:") and carry the keyword indexes, while "project" and
// "session" keep the plain value. The prefix is there because the Global
// project is the empty string, and how Qdrant treats empty strings in
// filters has differed between indexed and unindexed fields in reported
// issues; a filter key that is never empty does not depend on that.
//
// Vectors. The memories collection has the sparse vector "text" with the IDF
// modifier (see sparse.go) and, when Options.DenseSize is set at creation, a
// dense vector "dense" (cosine). Checkpoints and branches have no vectors:
// Qdrant accepts collections without vectors, and the client sends points
// with an empty named-vector map, which such a collection requires (a point
// with no vectors field at all is refused with "Expected some vectors").
//
// Durability. Every write is sent with Wait=true: Qdrant answers once the
// operation is in its write-ahead log and applied, so a nil error means the
// write survives a restart of the server (and of the daemon). How far it
// survives power loss is Qdrant's WAL configuration, not this package's.
//
// Optimistic locking. PutMemory and PutBranch read the stored point, compare
// Versions and write the new one. Qdrant has no transaction spanning a read
// and a write, so this compare-and-write is atomic only within one Store:
// writers of one Store are serialised per id by a lock in the process. Two
// processes (two daemons, or a script using the same collections) that read
// the same Version at the same moment can both write; the later write wins
// and the earlier is lost without either seeing ErrConflict. contextd runs
// one daemon per user, which makes that race narrow; pointing two daemons at
// the same collections widens it.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	qc "github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/daemon/store"
)

// Options configure Open. A nil *Options, and each zero field, mean the
// default given on the field.
type Options struct {
	// Host of the Qdrant server. Default: "localhost".
	Host string
	// Port of Qdrant's gRPC API. Default: 6334 (6333 is the REST port,
	// which this client does not speak).
	Port int
	// APIKey, when set, is sent with every call (Qdrant's api-key header).
	// Without UseTLS it travels in clear text. Default: none.
	APIKey string
	// UseTLS connects with TLS (system roots, TLS 1.3 at least).
	// Default: false.
	UseTLS bool
	// CollectionPrefix names the collections: prefix + "memories",
	// "checkpoints", "branches". Default: "contextd_".
	CollectionPrefix string
	// Timeout bounds Open's health check and each call to the server (a
	// context with an earlier deadline wins). Default: 10 s.
	Timeout time.Duration
	// DenseSize, when > 0, gives the memories collection a dense vector
	// "dense" of that many dimensions (cosine) when Open creates it, for
	// SetMemoryVector and hybrid search. A collection that already exists
	// keeps its vectors: Open then reads whether it has "dense" and of what
	// size, and fails if that contradicts a non-zero DenseSize.
	// Default: 0, lexical search only.
	DenseSize int
}

// Defaults of Options.
const (
	DefaultHost             = "localhost"
	DefaultPort             = 6334
	DefaultCollectionPrefix = "contextd_"
	DefaultTimeout          = 10 * time.Second
)

// minServer is the oldest Qdrant this package is written against: the
// Query API with prefetch and RRF fusion, and the IDF modifier on sparse
// vectors, both arrived in 1.10.
var minServer = qc.Version{Major: 1, Minor: 10}

// maxMessage is the largest gRPC message the client accepts (4 MiB by
// default in grpc-go); a checkpoint's Full may be larger than that.
const maxMessage = 64 << 20

// Names of vectors and payload keys.
const (
	vecText  = "text"
	vecDense = "dense"

	keyID         = "id"
	keyProject    = "project"
	keyProjectKey = "project_key"
	keySession    = "session"
	keySessionKey = "session_key"
	keyCreated    = "created"
	keyUpdated    = "updated"
	keyVersion    = "version"
)

// Store is the Qdrant backend. Its methods are safe for concurrent use.
type Store struct {
	addr    string // host:port, for Backend and errors
	timeout time.Duration

	memories, checkpoints, branches string // collection names
	denseSize                       int    // 0: the memories collection has no "dense" vector

	// mu guards client against Close: calls hold it for reading.
	mu     sync.RWMutex
	client *qc.Client // nil once closed

	// idLocks serialise read-compare-write per id within this Store.
	idLocks [64]sync.Mutex

	clockMu sync.Mutex
	last    time.Time // the latest time now returned
}

// now is the time a write records: the wall clock in UTC at nanosecond
// precision, made strictly increasing within this Store, so that records
// written one after the other never share a Created and "newest first" has
// one answer.
func (s *Store) now() time.Time {
	t := now()
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	if !t.After(s.last) {
		t = s.last.Add(time.Nanosecond)
	}
	s.last = t
	return t
}

var _ store.Store = (*Store)(nil)
var _ store.Vectors = (*Store)(nil)

// withDefaults returns *o (nil: the zero Options) with each zero field set
// to its default.
func (o *Options) withDefaults() Options {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Host == "" {
		opt.Host = DefaultHost
	}
	if opt.Port == 0 {
		opt.Port = DefaultPort
	}
	if opt.CollectionPrefix == "" {
		opt.CollectionPrefix = DefaultCollectionPrefix
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultTimeout
	}
	return opt
}

// Open connects to Qdrant, checks that it answers, and creates the
// collections and payload indexes that are missing. A server that cannot be
// reached fails with an error wrapping store.ErrUnavailable.
func Open(ctx context.Context, o *Options) (*Store, error) {
	opt := o.withDefaults()
	if opt.Port < 0 || opt.Port > 65535 {
		return nil, fmt.Errorf("qdrant store: port %d out of range", opt.Port)
	}
	if opt.DenseSize < 0 {
		return nil, fmt.Errorf("qdrant store: DenseSize %d is negative", opt.DenseSize)
	}

	s := &Store{
		addr:        net.JoinHostPort(opt.Host, strconv.Itoa(opt.Port)),
		timeout:     opt.Timeout,
		memories:    opt.CollectionPrefix + "memories",
		checkpoints: opt.CollectionPrefix + "checkpoints",
		branches:    opt.CollectionPrefix + "branches",
	}
	client, err := qc.NewClient(&qc.Config{
		Host:   opt.Host,
		Port:   opt.Port,
		APIKey: opt.APIKey,
		UseTLS: opt.UseTLS,
		// The client's own check runs a health call with a one-minute
		// timeout of its own and only logs; Open checks instead, within
		// Timeout, and fails.
		SkipCompatibilityCheck: true,
		// One connection: a per-user daemon makes few calls at a time.
		PoolSize:    1,
		GrpcOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage))},
	})
	if err != nil {
		return nil, fmt.Errorf("qdrant store: client for %s: %w", s.addr, err)
	}
	s.client = client

	if err := s.init(ctx, opt.DenseSize); err != nil {
		s.client.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init(ctx context.Context, denseSize int) error {
	hctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	reply, err := s.client.HealthCheck(hctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("qdrant store: open %s: %w", s.addr, ctx.Err())
		}
		return fmt.Errorf("qdrant store: cannot reach Qdrant at %s (%v); check that Qdrant is running there and "+
			"that the port is its gRPC port (6334 by default; 6333 is REST), and the TLS and API key settings: %w",
			s.addr, err, store.ErrUnavailable)
	}
	if v, err := qc.ParseVersion(reply.GetVersion()); err == nil &&
		(v.Major < minServer.Major || v.Major == minServer.Major && v.Minor < minServer.Minor) {
		return fmt.Errorf("qdrant store: Qdrant at %s is version %s; contextd needs %d.%d or later (Query API, IDF modifier)",
			s.addr, reply.GetVersion(), minServer.Major, minServer.Minor)
	}

	for _, c := range []struct {
		name   string
		create func() *qc.CreateCollection
		check  func(*qc.CollectionInfo) error
		index  map[string]qc.FieldType
	}{
		{
			name: s.memories,
			create: func() *qc.CreateCollection {
				cc := &qc.CreateCollection{
					CollectionName: s.memories,
					SparseVectorsConfig: qc.NewSparseVectorsConfig(map[string]*qc.SparseVectorParams{
						vecText: {Modifier: qc.Modifier_Idf.Enum()},
					}),
				}
				if denseSize > 0 {
					cc.VectorsConfig = qc.NewVectorsConfigMap(map[string]*qc.VectorParams{
						vecDense: {Size: uint64(denseSize), Distance: qc.Distance_Cosine},
					})
				}
				return cc
			},
			check: func(info *qc.CollectionInfo) error { return s.checkMemories(info, denseSize) },
			index: map[string]qc.FieldType{
				keyProjectKey: qc.FieldType_FieldTypeKeyword,
				"outcome":     qc.FieldType_FieldTypeKeyword,
				"archived":    qc.FieldType_FieldTypeBool,
				"confidence":  qc.FieldType_FieldTypeFloat,
				keyCreated:    qc.FieldType_FieldTypeInteger,
			},
		},
		{
			name:   s.checkpoints,
			create: func() *qc.CreateCollection { return &qc.CreateCollection{CollectionName: s.checkpoints} },
			index: map[string]qc.FieldType{
				keyProjectKey: qc.FieldType_FieldTypeKeyword,
				keySessionKey: qc.FieldType_FieldTypeKeyword,
				keyCreated:    qc.FieldType_FieldTypeInteger, // ListCheckpoints orders by it
			},
		},
		{
			name:   s.branches,
			create: func() *qc.CreateCollection { return &qc.CreateCollection{CollectionName: s.branches} },
			index: map[string]qc.FieldType{
				keySessionKey: qc.FieldType_FieldTypeKeyword,
				keyProjectKey: qc.FieldType_FieldTypeKeyword,
				"open":        qc.FieldType_FieldTypeBool,
				keyCreated:    qc.FieldType_FieldTypeInteger,
			},
		},
	} {
		if err := s.ensureCollection(ctx, c.name, c.create, c.check, c.index); err != nil {
			return err
		}
	}
	return nil
}

// ensureCollection creates the collection if it is missing, checks it, and
// creates the payload indexes it lacks. Indexes are checked on every Open,
// not only after creation, so that a daemon stopped between creating a
// collection and indexing it mends it at its next start.
func (s *Store) ensureCollection(ctx context.Context, name string, create func() *qc.CreateCollection,
	check func(*qc.CollectionInfo) error, index map[string]qc.FieldType) error {
	exists, err := call(ctx, s, "open", func(ctx context.Context) (bool, error) {
		return s.client.CollectionExists(ctx, name)
	})
	if err != nil {
		return err
	}
	if !exists {
		_, err := call(ctx, s, "open", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.client.CreateCollection(ctx, create())
		})
		// Another daemon may have created it in between.
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return fmt.Errorf("qdrant store: create collection %s: %w", name, err)
		}
	}
	info, err := call(ctx, s, "open", func(ctx context.Context) (*qc.CollectionInfo, error) {
		return s.client.GetCollectionInfo(ctx, name)
	})
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(info); err != nil {
			return err
		}
	}
	have := info.GetPayloadSchema()
	for field, typ := range index {
		if _, ok := have[field]; ok {
			continue
		}
		_, err := call(ctx, s, "open", func(ctx context.Context) (*qc.UpdateResult, error) {
			return s.client.CreateFieldIndex(ctx, &qc.CreateFieldIndexCollection{
				CollectionName: name,
				Wait:           qc.PtrOf(true),
				FieldName:      field,
				FieldType:      typ.Enum(),
			})
		})
		if err != nil {
			return fmt.Errorf("qdrant store: index %s.%s: %w", name, field, err)
		}
	}
	return nil
}

// checkMemories checks that the memories collection has the sparse vector
// "text" with the IDF modifier, and reads the size of "dense" if it has one.
func (s *Store) checkMemories(info *qc.CollectionInfo, want int) error {
	params := info.GetConfig().GetParams()
	text, ok := params.GetSparseVectorsConfig().GetMap()[vecText]
	if !ok || text.GetModifier() != qc.Modifier_Idf {
		return fmt.Errorf("qdrant store: collection %s on %s has no sparse vector %q with the IDF modifier; "+
			"it was not made by this version of contextd: choose another collection prefix or delete it",
			s.memories, s.addr, vecText)
	}
	have := 0
	if dense, ok := params.GetVectorsConfig().GetParamsMap().GetMap()[vecDense]; ok {
		have = int(dense.GetSize())
	}
	if want > 0 && have != want {
		return fmt.Errorf("qdrant store: collection %s on %s has a dense vector of size %d, DenseSize asks for %d; "+
			"the vectors of an existing collection are not changed: use another collection prefix or recreate it",
			s.memories, s.addr, have, want)
	}
	s.denseSize = have
	return nil
}

// Backend returns "qdrant:" and the server's host:port.
func (s *Store) Backend() string { return "qdrant:" + s.addr }

// Close closes the connection. Calls made after it fail with an error
// wrapping store.ErrUnavailable; calling it again returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		return nil
	}
	err := s.client.Close()
	s.client = nil
	if err != nil {
		return fmt.Errorf("qdrant store: close %s: %w", s.addr, err)
	}
	return nil
}

// call runs fn with the client under the read lock and a context bounded by
// Timeout, and turns transport failures into store.ErrUnavailable.
func call[T any](ctx context.Context, s *Store, op string, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.client == nil {
		return zero, fmt.Errorf("qdrant store: %s: store is closed: %w", op, store.ErrUnavailable)
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := fn(cctx)
	if err != nil {
		return zero, s.wrap(ctx, op, err)
	}
	return v, nil
}

// wrap gives err the context of op, and store.ErrUnavailable when the
// server could not be reached or refused the credentials.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		// The caller gave up: that says nothing about the server.
		return fmt.Errorf("qdrant store: %s: %w", op, err)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return fmt.Errorf("qdrant store: %s: Qdrant at %s did not answer (%v); check that it is running and reachable: %w",
			op, s.addr, err, store.ErrUnavailable)
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("qdrant store: %s: Qdrant at %s refused the credentials (%v); check the API key: %w",
			op, s.addr, err, store.ErrUnavailable)
	}
	return fmt.Errorf("qdrant store: %s: %w", op, err)
}

// lockID locks the stripe of id, for a read-compare-write.
func (s *Store) lockID(id string) func() {
	m := &s.idLocks[termIndex(id)%uint32(len(s.idLocks))]
	m.Lock()
	return m.Unlock
}

// errNotFound is the error for an id absent from the caller's scope; it says
// nothing about other scopes.
func errNotFound(what, id string) error {
	return fmt.Errorf("qdrant store: %s %q: %w", what, id, store.ErrNotFound)
}
