// Command toolsearch compares tool retrievals on a catalogue of MCP servers
// and a set of agent-phrased tasks, and reports what search mode saves:
//
//	go run ./bench/toolsearch [-fixtures DIR] [-queries FILE] [-split all|dev|test] [-k 5]
//
// It prints Recall@1/3/5 (and Recall@k for another -k) and MRR for exact-name matching, plain
// BM25 and contextd's index side by side; the cl100k tokens of every tool's
// definition (search mode off) against tool_search and tool_call's (on);
// and Build and Search latency at 1,000 tools, made by repeating the
// catalogue under renamed servers. Without flags it uses the frozen
// catalogue and queries of toolsearch/toolbench.
//
// A fixtures DIR holds one file per server, NAME.json, as a tools/list
// result plus provenance:
//
//	{"name": "github", "package": "@scope/pkg", "version": "1.2.3",
//	 "protocolVersion": "2025-06-18", "tools": [ {"name": ..., "description": ...,
//	 "inputSchema": {...}}, ... ]}
//
// Only name and tools are needed; name defaults to the file's. A tool is
// known as NAME.toolname.
//
// A queries FILE is JSON Lines, one task a line:
//
//	{"id": "q001", "q": "bump web in staging to 5 replicas",
//	 "expect": ["kubernetes.kubectl_scale"], "kind": "paraphrase", "split": "dev"}
//
// q and expect are needed; any tool of expect counts as found. kind
// (paraphrase, partial, name, cross) is informative, and split (dev, test)
// is what -split keeps; the committed sets name their splits dev/test,
// dev2/test2, test3 and test4 (the last two are held out whole). Errors name the file
// and line.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/contextd/contextd/toolsearch"
	"github.com/contextd/contextd/toolsearch/toolbench"
)

// errUsage is a flag value the runner cannot use.
var errUsage = errors.New("usage")

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "toolsearch:", err)
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fl := flag.NewFlagSet("toolsearch", flag.ContinueOnError)
	fixtures := fl.String("fixtures", "", "directory of NAME.json server files (default: the frozen catalogue)")
	queries := fl.String("queries", "", "JSONL query file (default: the committed query set)")
	split := fl.String("split", "all", "which queries: all, dev or test")
	k := fl.Int("k", 5, "result count for Recall@k and the latency searches (1..20)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *split != "all" && *split != "dev" && *split != "test" {
		return fmt.Errorf("%w: -split %q: want all, dev or test", errUsage, *split)
	}
	if *k < 1 || *k > 20 {
		return fmt.Errorf("%w: -k %d: want 1..20", errUsage, *k)
	}

	sets := toolbench.Sets()
	if *fixtures != "" || *queries != "" {
		sets = []toolbench.Set{outside(*fixtures, *queries)}
	}
	var servers []toolbench.Server
	var docs []toolsearch.Doc
	var qs []toolbench.Query
	for i, set := range sets {
		if *split == "dev" && set.Dev == "" {
			fmt.Fprintf(out, "%s: held out whole, no dev split\n\n", set.Name)
			continue
		}
		s, d, q, err := table(out, set, *split, *k)
		if err != nil {
			return err
		}
		if i == 0 {
			servers, docs, qs = s, d, q
		}
	}

	off, on := toolbench.ListTokens(toolbench.AllTools(servers)), toolbench.ListTokens(toolbench.SearchTools())
	fmt.Fprintf(out, "definition tokens of %s (cl100k, compact tools array)\n", sets[0].Name)
	fmt.Fprintf(out, "  search mode off: %6d  (%d tools)\n", off, len(docs))
	fmt.Fprintf(out, "  search mode on:  %6d  (%s, %s)  %.1f%% less\n", on, toolsearch.SearchToolName, toolsearch.CallToolName,
		100*(1-float64(on)/float64(max(off, 1))))

	big := toolbench.Replicate(docs, 1000)
	start := time.Now()
	ix := toolsearch.Build(big)
	built := time.Since(start)
	med, p90 := toolbench.Latency(func(q string) { ix.Search(q, *k) }, qs, 200)
	fmt.Fprintf(out, "\nlatency at %d tools (that catalogue repeated under renamed servers)\n", len(big))
	fmt.Fprintf(out, "  Build %v; Search over 200 queries: median %v, p90 %v\n",
		built.Round(time.Millisecond), med.Round(time.Microsecond), p90.Round(time.Microsecond))
	return nil
}

// outside is the set of a query file, a catalogue directory or both given
// on the command line; the committed first set stands in for the other.
func outside(fixtures, queries string) toolbench.Set {
	set := toolbench.Sets()[0]
	if fixtures != "" {
		set.Servers = func() ([]toolbench.Server, error) { return toolbench.Load(fixtures) }
		set.Name = fmt.Sprintf("queries over %s", fixtures)
	}
	if queries != "" {
		set.File = queries
		set.Queries = func() ([]toolbench.Query, error) { return toolbench.LoadQueries(queries) }
		set.Name = fmt.Sprintf("%s over %s", queries, cmp.Or(fixtures, "servers"))
	}
	set.Dev, set.Test = "dev", "test"
	return set
}

// table prints the retrievals side by side on the split of set (dev and
// test name the set's own two splits), and returns what it read.
func table(out io.Writer, set toolbench.Set, split string, k int) ([]toolbench.Server, []toolsearch.Doc, []toolbench.Query, error) {
	servers, err := set.Servers()
	if err != nil {
		return nil, nil, nil, err
	}
	docs, err := toolbench.Docs(servers)
	if err != nil {
		return nil, nil, nil, err
	}
	qs, err := set.Queries()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := toolbench.CheckQueries(set.File, qs, docs); err != nil {
		return nil, nil, nil, err
	}
	name := map[string]string{"all": "all", "dev": set.Dev, "test": set.Test}[split]
	qs = toolbench.Split(qs, name)
	if len(qs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s: no query in split %q", set.File, name)
	}

	fmt.Fprintf(out, "%s: %d tools of %d servers, %d queries (split %s)\n\n", set.Name, len(docs), len(servers), len(qs), name)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	// R@k gets a column of its own when it is not one of the three.
	extra := k != 1 && k != 3 && k != 5
	head := "ranker\tR@1\tR@3\tR@5\t"
	if extra {
		head += fmt.Sprintf("R@%d\t", k)
	}
	fmt.Fprintln(tw, head+"MRR\tn\t")
	for _, r := range toolbench.Rankers(docs) {
		m := toolbench.Evaluate(r.Rank, qs)
		row := fmt.Sprintf("%s\t%.3f\t%.3f\t%.3f\t", r.Name, m.R1, m.R3, m.R5)
		if extra {
			row += fmt.Sprintf("%.3f\t", toolbench.RecallAt(r.Rank, qs, k))
		}
		fmt.Fprintf(tw, "%s%.3f\t%d\t\n", row, m.MRR, m.N)
	}
	if err := tw.Flush(); err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintln(out)
	return servers, docs, qs, nil
}
