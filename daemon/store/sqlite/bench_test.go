package sqlite

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/internal/ids"
)

// The generator below writes memories that look like a coding agent's:
// a topic's tools and nouns, verbs of fixing and breaking, and a long tail of
// rarer words drawn with a Zipf law, so that posting lists have the skew of
// real text (a few words everywhere, most words rare).

var benchTopics = [][]string{
	{"go", "test", "goroutine", "channel", "race", "mutex", "context", "deadline", "interface", "module", "vet", "benchmark", "fuzz", "generics", "slice", "map"},
	{"git", "rebase", "merge", "commit", "branch", "remote", "push", "cherry-pick", "bisect", "stash", "hook", "submodule", "tag", "history", "conflict"},
	{"docker", "image", "container", "layer", "volume", "compose", "registry", "dockerfile", "buildkit", "network", "entrypoint", "alpine", "healthcheck"},
	{"ci", "pipeline", "runner", "job", "artifact", "cache", "workflow", "flaky", "retry", "timeout", "matrix", "secret", "badge"},
	{"postgres", "migration", "index", "query", "transaction", "lock", "schema", "column", "table", "vacuum", "replica", "deadlock", "orm"},
	{"permission", "chmod", "owner", "sudo", "group", "umask", "ssh", "key", "selinux", "capability", "setuid", "acl"},
	{"http", "client", "server", "timeout", "tls", "certificate", "proxy", "header", "cookie", "cors", "retry", "keepalive", "dns"},
	{"python", "pip", "virtualenv", "pytest", "import", "wheel", "poetry", "typing", "asyncio", "fixture"},
	{"node", "npm", "package", "lockfile", "typescript", "eslint", "webpack", "jest", "promise", "esm"},
	{"kubernetes", "pod", "deployment", "service", "ingress", "helm", "configmap", "probe", "namespace", "crashloop"},
	{"log", "metric", "trace", "alert", "dashboard", "sampling", "span", "latency", "error", "panic"},
	{"memory", "cpu", "profile", "allocation", "leak", "garbage", "heap", "cache", "throughput", "regression"},
}

var benchVerbs = []string{"fix", "avoid", "prefer", "check", "pin", "retry", "split", "guard", "reset", "rebuild",
	"restart", "upgrade", "downgrade", "configure", "disable", "enable", "mock", "isolate", "document", "measure"}

var benchFailures = []string{"fails", "hangs", "times out", "breaks", "leaks", "panics", "is flaky", "is slow",
	"corrupts", "drifts", "crashes", "returns stale data", "deadlocks", "runs twice"}

var benchGlue = []string{"the", "a", "when", "after", "before", "because", "so", "then", "only", "with", "on", "in", "for", "and", "not"}

func benchTail(r *rand.Rand, z *rand.Zipf) string {
	n := z.Uint64()
	// Pronounceable rare words: a stem per rank, stable across runs.
	syl := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "shu", "dra", "qua"}
	var b strings.Builder
	for n > 0 || b.Len() < 4 {
		b.WriteString(syl[n%uint64(len(syl))])
		n /= uint64(len(syl))
	}
	return b.String()
}

func upperFirst(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

type benchGen struct {
	r *rand.Rand
	z *rand.Zipf
}

func newBenchGen(seed int64) *benchGen {
	r := rand.New(rand.NewSource(seed))
	return &benchGen{r: r, z: rand.NewZipf(r, 1.1, 2, 50000)}
}

func (g *benchGen) pick(s []string) string { return s[g.r.Intn(len(s))] }

func (g *benchGen) words(topic []string, n int) string {
	out := make([]string, n)
	for i := range out {
		switch x := g.r.Intn(10); {
		case x < 4:
			out[i] = g.pick(topic)
		case x < 6:
			out[i] = g.pick(benchGlue)
		case x < 7:
			out[i] = g.pick(benchTopics[g.r.Intn(len(benchTopics))])
		default:
			out[i] = benchTail(g.r, g.z)
		}
	}
	return strings.Join(out, " ")
}

func (g *benchGen) memory() store.Memory {
	topic := benchTopics[g.r.Intn(len(benchTopics))]
	a, b := g.pick(topic), g.pick(topic)
	return store.Memory{
		Title: fmt.Sprintf("%s %s %s when %s %s", upperFirst(g.pick(benchVerbs)), a, b, g.pick(topic), g.pick(benchFailures)),
		Description: fmt.Sprintf("When the %s %s %s; not when %s.", a, g.words(topic, 3), g.pick(benchFailures),
			g.words(topic, 4)),
		Content: fmt.Sprintf("The %s %s after %s. %s. %s %s first, then %s.", b, g.pick(benchFailures), g.words(topic, 8),
			g.words(topic, 14), upperFirst(g.pick(benchVerbs)), g.words(topic, 4), g.words(topic, 6)),
		Outcome:    []string{store.Success, store.Failure}[g.r.Intn(2)],
		Tags:       []string{a, g.pick(topic)},
		Confidence: 0.3 + 0.7*g.r.Float64(),
	}
}

// query is a 3 to 6 word task as an agent would type it.
func (g *benchGen) query() string {
	topic := benchTopics[g.r.Intn(len(benchTopics))]
	n := 3 + g.r.Intn(4)
	w := []string{g.pick(topic), g.pick(benchFailures)}
	for len(w) < n {
		if g.r.Intn(3) == 0 {
			w = append(w, benchTail(g.r, g.z))
		} else {
			w = append(w, g.pick(topic))
		}
	}
	g.r.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	return strings.Join(strings.Fields(strings.Join(w, " "))[:n], " ")
}

const benchProject = "/home/dev/src/bench"

// fillBench inserts n generated memories in one transaction, straight into
// the table (the FTS triggers index them): PutMemory's one fsync per write
// would take minutes for 100,000.
func fillBench(tb testing.TB, s *Store, n int) {
	ctx := context.Background()
	g := newBenchGen(int64(n))
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO memories (id, project, title, description, content, outcome, tags,
		confidence, uses, helpful, unhelpful, archived, created, updated, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, ?, ?, ?, 1)`)
	if err != nil {
		tb.Fatal(err)
	}
	t := time.Now().UnixNano()
	for i := range n {
		m := g.memory()
		id := ids.New()
		project := benchProject
		if i%5 == 0 {
			project = store.Global
		}
		tags := `["` + strings.Join(m.Tags, `","`) + `"]`
		if _, err := st.ExecContext(ctx, id, project, m.Title, m.Description, m.Content, m.Outcome, tags,
			m.Confidence, i%50 == 0, t, t); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	// Merge the FTS segments the bulk load left, as a long-lived database
	// would have after its automatic merges.
	if _, err := s.w.ExecContext(ctx, `INSERT INTO memories_fts (memories_fts) VALUES ('optimize')`); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkSearch measures SearchMemories at 10,000 and 100,000 memories,
// and beside it, on the same rows and the same queries, a plain scan
// (title LIKE '%word%'), as the baseline an index must beat. Metrics per
// size: ms/query (SearchMemories), like-ms/query, like/fts (how many times
// faster the index is), p95-ms and max-ms (SearchMemories' tail).
// ns/op counts both searches.
func BenchmarkSearch(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{10_000, 100_000} {
		s, err := Open(&Options{Path: filepath.Join(dir, fmt.Sprintf("bench-%d.db", n))})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		fillBench(b, s, n)
		b.Logf("filled %d memories in %v", n, time.Since(start).Round(time.Millisecond))

		g := newBenchGen(7)
		queries := make([]string, 500)
		for i := range queries {
			queries[i] = g.query()
		}
		b.Run(fmt.Sprintf("memories=%d", n), func(b *testing.B) {
			ctx := context.Background()
			var fts, like time.Duration
			per := make([]time.Duration, 0, b.N)
			hits := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				q := queries[i%len(queries)]
				t0 := time.Now()
				h, err := s.SearchMemories(ctx, store.MemoryQuery{Text: q, Projects: []string{benchProject, store.Global}})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				hits += len(h)
				word := strings.Fields(q)[0]
				rows, err := s.r.QueryContext(ctx, `SELECT id, title FROM memories WHERE title LIKE ?`, "%"+word+"%")
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
					var id, title string
					rows.Scan(&id, &title)
				}
				rows.Close()
				fts += t1.Sub(t0)
				like += time.Since(t1)
				per = append(per, t1.Sub(t0))
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
			b.ReportMetric(ms(fts), "ms/query")
			b.ReportMetric(ms(like), "like-ms/query")
			b.ReportMetric(float64(like)/float64(fts), "like/fts")
			b.ReportMetric(float64(hits)/float64(b.N), "hits/query")
			// The tail: queries of only common words score many rows.
			slices.Sort(per)
			b.ReportMetric(float64(per[(len(per)*95+99)/100-1])/float64(time.Millisecond), "p95-ms")
			b.ReportMetric(float64(per[len(per)-1])/float64(time.Millisecond), "max-ms")
		})
		s.Close()
	}
}
