// Package store is the storage contract of contextd's state services:
// memories, checkpoints and branches (context folding), with one interface
// every backend implements (the embedded SQLite file, Qdrant) and one
// contract suite (storetest) that every backend passes.
//
// The store keeps records; it makes no policy. Deciding that a memory is a
// near-duplicate, moving confidence, archiving, holding a branch to its budget
// belong to the tools (daemon/state), so that every backend behaves the same.
package store

import (
	"context"
	"errors"
	"time"
)

// Errors a backend returns (wrapped with %w and context).
var (
	// ErrNotFound: no record with that id in the given scope. Another
	// project's record is not found either: which one is not said.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a write lost a race (a stale Version); re-read and retry.
	ErrConflict = errors.New("conflicting update")
	// ErrUnavailable: the backend cannot be reached (a server down, a file
	// locked by another daemon).
	ErrUnavailable = errors.New("store unavailable")
)

// Global is the Project of records shared by every project of the user.
const Global = ""

// Outcome of the experience a memory records.
const (
	Success = "success"
	Failure = "failure"
)

// Memory is one ReasoningBank item: a lesson with a title, a one-sentence
// description saying when it applies (and when not), and short content.
type Memory struct {
	ID          string // assigned by PutMemory when empty (a UUID, so Qdrant can use it as a point id)
	Project     string // the workspace root it belongs to; Global ("") for all projects
	Title       string
	Description string
	Content     string
	Outcome     string   // Success or Failure
	Tags        []string // lower case, sorted, unique

	Confidence float64 // 0..1, moved by feedback (the tools' rule)
	Uses       int     // times handed out by memory_get
	Helpful    int     // feedback counts
	Unhelpful  int
	Archived   bool // kept, never searched

	Created, Updated time.Time
	// Version increases on every write; PutMemory with a non-zero Version
	// fails with ErrConflict if the stored one differs (optimistic locking).
	Version int64
}

// MemoryQuery is a lexical (and, where the backend has vectors, dense) search.
type MemoryQuery struct {
	Text     string
	Projects []string // the scopes searched: typically {project, Global}
	Limit    int      // most hits; <= 0 means 3
	// MinConfidence leaves out memories below it.
	MinConfidence float64
	// Archived memories are left out unless this is set.
	IncludeArchived bool
	// Vector, when non-nil, is the query's dense embedding; backends fuse
	// lexical and dense rankings (reciprocal rank fusion).
	Vector []float32
}

// Hit is a search result: the memory and its score (higher is better; the
// scale is the backend's, comparable only within one answer).
type Hit struct {
	Memory Memory
	Score  float64
}

// Checkpoint is an agent's saved state at three levels.
type Checkpoint struct {
	ID      string // assigned by PutCheckpoint when empty
	Project string
	Session string
	Name    string // optional, the agent's label
	Summary string // a few sentences
	Context string // the working set: decisions, files, next steps
	Full    string // anything, large
	Created time.Time
}

// Branch is an open or closed fold of a session's context.
type Branch struct {
	ID          string // assigned by PutBranch when empty
	Session     string
	Project     string
	Parent      string // the enclosing branch's id, "" at the top
	Depth       int    // 1 for a top-level branch
	Description string
	Budget      int // tokens the responses inside it may cost
	Used        int // tokens they cost so far
	Calls       int // tool calls made inside it
	Open        bool
	Summary     string // set when returned
	Created     time.Time
	Closed      time.Time
	Version     int64 // as Memory.Version
}

// Store is the storage every backend implements. Methods are safe for
// concurrent use. A write that returns nil is durable: a crash right after it
// (kill -9 of the daemon, power loss where the backend's medium allows) does
// not lose it.
type Store interface {
	// PutMemory inserts m (ID empty: a new id is set in m) or replaces the
	// memory with m.ID. Created, Updated and Version are maintained by the
	// store and set in m.
	PutMemory(ctx context.Context, m *Memory) error
	// GetMemory returns the memory with id if it is in one of projects.
	GetMemory(ctx context.Context, id string, projects []string) (*Memory, error)
	// SearchMemories ranks memories against q, best first.
	SearchMemories(ctx context.Context, q MemoryQuery) ([]Hit, error)
	// CountMemories counts the memories of projects (archived included).
	CountMemories(ctx context.Context, projects []string) (int, error)

	// PutCheckpoint stores c (a new id is set when empty). Checkpoints are
	// not changed once written.
	PutCheckpoint(ctx context.Context, c *Checkpoint) error
	// GetCheckpoint returns the checkpoint with id in project.
	GetCheckpoint(ctx context.Context, id, project string) (*Checkpoint, error)
	// ListCheckpoints returns project's checkpoints, newest first, at most
	// limit (<= 0: 20), with Full left empty (it can be large).
	ListCheckpoints(ctx context.Context, project string, limit int) ([]Checkpoint, error)

	// PutBranch inserts or replaces b, as PutMemory.
	PutBranch(ctx context.Context, b *Branch) error
	// GetBranch returns the branch with id of session.
	GetBranch(ctx context.Context, id, session string) (*Branch, error)
	// OpenBranches returns session's open branches, outermost first.
	OpenBranches(ctx context.Context, session string) ([]Branch, error)

	// Backend names the backend for status and doctor ("sqlite:/path",
	// "qdrant:host:port").
	Backend() string
	Close() error
}

// Vectors is implemented by a backend that keeps dense embeddings of
// memories for MemoryQuery.Vector (both backends do; the interface is
// separate so that a backend without vectors still is a Store).
type Vectors interface {
	// SetMemoryVector stores v as the dense embedding of the memory with id
	// in project (ErrNotFound when it is not there). It changes neither the
	// memory nor its Version. PutMemory drops the vector when the memory's
	// text changes, since it would describe the old text. A vector of
	// another dimension than the query's is left out of dense ranking (a
	// changed embedding model), never an error of the search; a backend
	// that holds one dimension only refuses it here.
	SetMemoryVector(ctx context.Context, id, project string, v []float32) error
}
