package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"

	"github.com/contextd/contextd/internal/nanotime"
)

// Column weights of bm25(), in the FTS table's column order: the title and
// the one-sentence description say what a memory is about, the content is
// longer and looser, the tags are few and deliberate.
const bm25Weights = "10.0, 5.0, 1.0, 3.0" // title, description, content, tags

// rrfK is the constant of reciprocal rank fusion: score = sum 1/(k + rank).
const rrfK = 60

const memoryColumns = `m.id, m.project, m.title, m.description, m.content, m.outcome, m.tags,
	m.confidence, m.uses, m.helpful, m.unhelpful, m.archived, m.created, m.updated, m.version`

func scanMemory(sc interface{ Scan(...any) error }, extra ...any) (*store.Memory, error) {
	var (
		m                store.Memory
		tags             string
		created, updated int64
	)
	dest := append([]any{&m.ID, &m.Project, &m.Title, &m.Description, &m.Content, &m.Outcome, &tags,
		&m.Confidence, &m.Uses, &m.Helpful, &m.Unhelpful, &m.Archived, &created, &updated, &m.Version}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(tags), &m.Tags); err != nil {
		return nil, fmt.Errorf("tags of %s: %w", m.ID, err)
	}
	if len(m.Tags) == 0 {
		m.Tags = nil
	}
	m.Created, m.Updated = nanotime.Time(created), nanotime.Time(updated)
	return &m, nil
}

// PutMemory inserts m or replaces the memory with m.ID; see store.Store.
// Replacing a memory whose title, description or content changed drops its
// vector (SetMemoryVector), which no longer describes it.
func (s *Store) PutMemory(ctx context.Context, m *store.Memory) error {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	// Without HTML escaping: "<" stored as \u003c would index a "u003c".
	var tagsJSON bytes.Buffer
	enc := json.NewEncoder(&tagsJSON)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tags); err != nil {
		return fmt.Errorf("sqlite store: put memory: tags: %w", err)
	}
	id := m.ID
	if id == "" {
		id = ids.New()
	}
	t := now()

	tx, cur, err := s.beginPut(ctx, "memory", "memories", id, m.Version)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	version, created := cur.version, cur.created
	args := []any{m.Project, m.Title, m.Description, m.Content, m.Outcome, strings.TrimSpace(tagsJSON.String()),
		m.Confidence, m.Uses, m.Helpful, m.Unhelpful, m.Archived, nanotime.Of(t)}
	if cur.exists {
		version++
		_, err = tx.ExecContext(ctx, `UPDATE memories SET
			vector = CASE WHEN title = ?2 AND description = ?3 AND content = ?4 THEN vector END,
			project = ?1, title = ?2, description = ?3, content = ?4, outcome = ?5, tags = ?6,
			confidence = ?7, uses = ?8, helpful = ?9, unhelpful = ?10, archived = ?11,
			updated = ?12, version = ?13
			WHERE id = ?14`, append(args, version, id)...)
	} else {
		version, created = 1, nanotime.Of(t)
		_, err = tx.ExecContext(ctx, `INSERT INTO memories
			(project, title, description, content, outcome, tags, confidence, uses, helpful, unhelpful,
			 archived, updated, version, id, created)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)`,
			append(args, version, id, created)...)
	}
	if err != nil {
		return fmt.Errorf("sqlite store: put memory %q: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite store: put memory %q: commit: %w", id, err)
	}
	m.ID, m.Version, m.Created, m.Updated = id, version, nanotime.Time(created), t
	return nil
}

// GetMemory returns the memory with id if it belongs to one of projects.
func (s *Store) GetMemory(ctx context.Context, id string, projects []string) (*store.Memory, error) {
	return getMemory(ctx, s.r, id, projects)
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getMemory(ctx context.Context, db querier, id string, projects []string) (*store.Memory, error) {
	if len(projects) == 0 {
		return nil, notFound("get memory", id)
	}
	in, args := inList(projects)
	row := db.QueryRowContext(ctx, `SELECT `+memoryColumns+` FROM memories m
		WHERE m.id = ? AND m.project IN (`+in+`)`, append([]any{id}, args...)...)
	m, err := scanMemory(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("get memory", id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite store: get memory %q: %w", id, err)
	}
	return m, nil
}

// CountMemories counts the memories of projects, archived ones included.
func (s *Store) CountMemories(ctx context.Context, projects []string) (int, error) {
	if len(projects) == 0 {
		return 0, nil
	}
	in, args := inList(projects)
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE project IN (`+in+`)`, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite store: count memories: %w", err)
	}
	return n, nil
}

// SetMemoryVector stores v as the dense embedding of memory id in project,
// used by SearchMemories when a query carries a Vector; a nil v removes it.
// It is not a change of the memory: Version and Updated stay as they are.
// Vectors of any dimension are kept; a search compares only those of its
// query's dimension. See store.Vectors.
func (s *Store) SetMemoryVector(ctx context.Context, id, project string, v []float32) error {
	var blob []byte
	if v != nil {
		blob = make([]byte, 4*len(v))
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("sqlite store: set vector of %q: component %d is %v", id, i, x)
			}
			binary.LittleEndian.PutUint32(blob[4*i:], math.Float32bits(x))
		}
	}
	res, err := s.w.ExecContext(ctx, `UPDATE memories SET vector = ? WHERE id = ? AND project = ?`, blob, id, project)
	if err != nil {
		return fmt.Errorf("sqlite store: set vector of %q: %w", id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return notFound("set vector of", id)
	}
	return nil
}

// SearchMemories ranks the memories of q.Projects against q.Text with bm25
// over the FTS index and, when q.Vector is set and memories have vectors,
// fuses that ranking with a cosine ranking by reciprocal rank fusion.
// Text without words matches nothing (no error). Scores: -bm25 when lexical
// only, the fused RRF score otherwise.
func (s *Store) SearchMemories(ctx context.Context, q store.MemoryQuery) ([]store.Hit, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 3
	}
	if len(q.Projects) == 0 {
		return nil, nil
	}
	terms := queryTerms(q.Text)
	if len(terms) == 0 && len(q.Vector) == 0 {
		return nil, nil
	}
	// One read transaction: every statement below sees the same snapshot,
	// so a memory ranked is the memory returned.
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: search memories: %w", err)
	}
	defer tx.Rollback()
	if len(q.Vector) == 0 {
		hits, err := lexical(ctx, tx, q, terms, limit)
		if err != nil {
			return nil, fmt.Errorf("sqlite store: search memories: %w", err)
		}
		return hits, nil
	}

	// Fusion: each ranking contributes its top candidates; a memory found
	// by both rises above one found by either alone.
	depth := max(limit*10, 50)
	var lex []store.Hit
	if len(terms) > 0 {
		if lex, err = lexical(ctx, tx, q, terms, depth); err != nil {
			return nil, fmt.Errorf("sqlite store: search memories: %w", err)
		}
	}
	near, err := dense(ctx, tx, q, depth)
	if err != nil {
		return nil, fmt.Errorf("sqlite store: search memories: %w", err)
	}
	if len(near) == 0 {
		if len(lex) > limit {
			lex = lex[:limit]
		}
		return lex, nil
	}
	type fused struct {
		m     *store.Memory
		id    string
		score float64
	}
	byID := map[string]*fused{}
	var order []*fused
	for i, h := range lex {
		f := &fused{m: &lex[i].Memory, id: h.Memory.ID, score: 1.0 / float64(rrfK+i+1)}
		byID[f.id] = f
		order = append(order, f)
	}
	for i, id := range near {
		if f := byID[id]; f != nil {
			f.score += 1.0 / float64(rrfK+i+1)
			continue
		}
		f := &fused{id: id, score: 1.0 / float64(rrfK+i+1)}
		byID[id] = f
		order = append(order, f)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].score > order[j].score })
	if len(order) > limit {
		order = order[:limit]
	}
	hits := make([]store.Hit, 0, len(order))
	for _, f := range order {
		if f.m == nil {
			m, err := getMemory(ctx, tx, f.id, q.Projects)
			if err != nil {
				return nil, fmt.Errorf("sqlite store: search memories: %w", err)
			}
			f.m = m
		}
		hits = append(hits, store.Hit{Memory: *f.m, Score: f.score})
	}
	return hits, nil
}

// scopeFilter is the WHERE clause (on alias m) shared by both rankings.
func scopeFilter(q store.MemoryQuery) (string, []any) {
	in, args := inList(q.Projects)
	where := `m.project IN (` + in + `) AND m.confidence >= ?`
	args = append(args, q.MinConfidence)
	if !q.IncludeArchived {
		where += ` AND m.archived = 0`
	}
	return where, args
}

// commonDF: a term in more than this many memories is common. Scoring every
// memory that holds a common word is what makes a plain OR query slow on a
// large store (bm25 costs microseconds a row), and such words say little.
// A variable for the tests.
var commonDF = 500

// lexical returns the best limit memories for terms by bm25 over the OR of
// all terms. Following Lucene's "common terms" query, it does not score every
// memory that holds any term: it finds candidates by the rare terms first,
// then, if they are too few, by all the common terms together, and only
// then, if still too few, by any term. Candidates are always scored against
// the whole OR expression, so scores compare across stages and a memory that
// also holds common words ranks higher for them. What this gives up: a
// memory holding only common words is not considered while enough memories
// hold rare ones. A store where no term is common runs one plain OR query.
func lexical(ctx context.Context, tx querier, q store.MemoryQuery, terms []string, limit int) ([]store.Hit, error) {
	rare, common, err := splitCommon(ctx, tx, terms)
	if err != nil {
		return nil, fmt.Errorf("lexical: %w", err)
	}
	stages := stageExprs(terms, rare, common)
	where, args := scopeFilter(q)
	type cand struct {
		rowid int64
		r     float64
	}
	var cands []cand
	seen := map[int64]bool{}
	for _, stage := range stages {
		var sel []string
		var sargs []any
		for _, e := range stage {
			sel = append(sel, `SELECT rowid AS rid, bm25(memories_fts, `+bm25Weights+`) AS r FROM memories_fts WHERE memories_fts MATCH ?`)
			sargs = append(sargs, e)
		}
		// Rank on the index and the filter columns only; the full rows
		// are read for the winners alone.
		rows, err := tx.QueryContext(ctx, `SELECT c.rid, c.r FROM (`+strings.Join(sel, " UNION ALL ")+`) c
			JOIN memories m ON m.rowid = c.rid
			WHERE `+where+` ORDER BY c.r, c.rid LIMIT ?`, append(append(sargs, args...), limit+len(cands))...)
		if err != nil {
			return nil, fmt.Errorf("lexical: %w", err)
		}
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.rowid, &c.r); err != nil {
				rows.Close()
				return nil, fmt.Errorf("lexical: %w", err)
			}
			if !seen[c.rowid] {
				seen[c.rowid] = true
				cands = append(cands, c)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("lexical: %w", err)
		}
		if len(cands) >= limit {
			break
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].r != cands[j].r {
			return cands[i].r < cands[j].r
		}
		return cands[i].rowid < cands[j].rowid
	})
	if len(cands) > limit {
		cands = cands[:limit]
	}
	if len(cands) == 0 {
		return nil, nil
	}

	rowids := make([]string, len(cands))
	for i, c := range cands {
		rowids[i] = strconv.FormatInt(c.rowid, 10)
	}
	in, rargs := inList(rowids)
	rows, err := tx.QueryContext(ctx, `SELECT `+memoryColumns+`, m.rowid FROM memories m WHERE m.rowid IN (`+in+`)`, rargs...)
	if err != nil {
		return nil, fmt.Errorf("lexical: %w", err)
	}
	defer rows.Close()
	byRowid := map[int64]*store.Memory{}
	for rows.Next() {
		var rowid int64
		m, err := scanMemory(rows, &rowid)
		if err != nil {
			return nil, fmt.Errorf("lexical: %w", err)
		}
		byRowid[rowid] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("lexical: %w", err)
	}
	hits := make([]store.Hit, 0, len(cands))
	for _, c := range cands {
		if m := byRowid[c.rowid]; m != nil { // always, in one snapshot
			// bm25() is lower-is-better; Hit.Score is higher-is-better.
			hits = append(hits, store.Hit{Memory: *m, Score: -c.r})
		}
	}
	return hits, nil
}

// stageExprs returns the stages of lexical: each a union of MATCH
// expressions. Every expression holds every term exactly once: bm25 sums
// over the phrases of the expression, so that is what makes its scores
// those of the OR of all terms (a term twice would count twice).
func stageExprs(terms, rare, common []string) [][]string {
	all := orExpr(terms)
	var stages [][]string
	switch {
	case len(common) == 0:
		stages = [][]string{{all}}
	case len(rare) == 0:
		stages = [][]string{{andExpr(common)}}
	default:
		r, c := "("+orExpr(rare)+")", "("+orExpr(common)+")"
		stages = [][]string{
			{r + " AND " + c, r + " NOT " + c},     // holding a rare term
			{"(" + andExpr(common) + ") NOT " + r}, // all common terms and no rare one
		}
	}
	if len(common) > 1 {
		stages = append(stages, []string{all}) // any term: complete, and slow
	}
	return stages
}

// splitCommon sorts terms into rare and common (see commonDF), counting
// each term's memories only up to commonDF+1.
func splitCommon(ctx context.Context, tx querier, terms []string) (rare, common []string, err error) {
	if len(terms) == 1 {
		return terms, nil, nil // one term: nothing to gain
	}
	cols := make([]string, len(terms))
	args := make([]any, len(terms))
	for i, t := range terms {
		cols[i] = `(SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ` +
			strconv.Itoa(commonDF+1) + `))`
		args[i] = t
	}
	counts := make([]int, len(terms))
	dest := make([]any, len(terms))
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := tx.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dest...); err != nil {
		return nil, nil, fmt.Errorf("term frequencies: %w", err)
	}
	for i, t := range terms {
		if counts[i] > commonDF {
			common = append(common, t)
		} else {
			rare = append(rare, t)
		}
	}
	return rare, common, nil
}

// dense ranks the in-scope memories with a vector of q.Vector's dimension by
// cosine similarity, brute force: the memories of one user number in the
// thousands, where a scan is fast enough and needs no index to maintain.
func dense(ctx context.Context, tx querier, q store.MemoryQuery, limit int) ([]string, error) {
	qn := norm(q.Vector)
	if qn == 0 || math.IsNaN(qn) || math.IsInf(qn, 0) {
		return nil, nil
	}
	where, args := scopeFilter(q)
	rows, err := tx.QueryContext(ctx, `SELECT m.id, m.vector FROM memories m
		WHERE `+where+` AND length(m.vector) = ?`, append(args, 4*len(q.Vector))...)
	if err != nil {
		return nil, fmt.Errorf("dense: %w", err)
	}
	defer rows.Close()
	type scored struct {
		id  string
		cos float64
	}
	var all []scored
	for rows.Next() {
		var (
			id   string
			blob []byte
		)
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("dense: %w", err)
		}
		var dot, vn float64
		for i, x := range q.Vector {
			y := float64(math.Float32frombits(binary.LittleEndian.Uint32(blob[4*i:])))
			dot += float64(x) * y
			vn += y * y
		}
		if vn == 0 {
			continue
		}
		all = append(all, scored{id, dot / (qn * math.Sqrt(vn))})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dense: %w", err)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].cos > all[j].cos })
	if len(all) > limit {
		all = all[:limit]
	}
	ids := make([]string, len(all))
	for i, a := range all {
		ids[i] = a.id
	}
	return ids, nil
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
