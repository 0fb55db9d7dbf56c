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
// is what -split keeps. Errors name the file and line.
package main

import (
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

	servers, err := toolbench.Fixtures()
	if *fixtures != "" {
		servers, err = toolbench.Load(*fixtures)
	}
	if err != nil {
		return err
	}
	docs, err := toolbench.Docs(servers)
	if err != nil {
		return err
	}
	qs, err := toolbench.Queries()
	qfile := "testdata/queries.jsonl"
	if *queries != "" {
		qs, err = toolbench.LoadQueries(*queries)
		qfile = *queries
	}
	if err != nil {
		return err
	}
	if err := toolbench.CheckQueries(qfile, qs, docs); err != nil {
		return err
	}
	qs = toolbench.Split(qs, *split)
	if len(qs) == 0 {
		return fmt.Errorf("%s: no query in split %q", qfile, *split)
	}

	fmt.Fprintf(out, "%d tools of %d servers, %d queries (split %s)\n\n", len(docs), len(servers), len(qs), *split)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	// R@k gets a column of its own when it is not one of the three.
	extra := *k != 1 && *k != 3 && *k != 5
	head := "ranker\tR@1\tR@3\tR@5\t"
	if extra {
		head += fmt.Sprintf("R@%d\t", *k)
	}
	fmt.Fprintln(tw, head+"MRR\tn\t")
	for _, r := range toolbench.Rankers(docs) {
		m := toolbench.Evaluate(r.Rank, qs)
		row := fmt.Sprintf("%s\t%.3f\t%.3f\t%.3f\t", r.Name, m.R1, m.R3, m.R5)
		if extra {
			row += fmt.Sprintf("%.3f\t", toolbench.RecallAt(r.Rank, qs, *k))
		}
		fmt.Fprintf(tw, "%s%.3f\t%d\t\n", row, m.MRR, m.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	off, on := toolbench.ListTokens(toolbench.AllTools(servers)), toolbench.ListTokens(toolbench.SearchTools())
	fmt.Fprintf(out, "\ndefinition tokens (cl100k, compact tools array)\n")
	fmt.Fprintf(out, "  search mode off: %6d  (%d tools)\n", off, len(docs))
	fmt.Fprintf(out, "  search mode on:  %6d  (%s, %s)  %.1f%% less\n", on, toolsearch.SearchToolName, toolsearch.CallToolName,
		100*(1-float64(on)/float64(max(off, 1))))

	big := toolbench.Replicate(docs, 1000)
	start := time.Now()
	ix := toolsearch.Build(big)
	built := time.Since(start)
	med, p90 := toolbench.Latency(func(q string) { ix.Search(q, *k) }, qs, 200)
	fmt.Fprintf(out, "\nlatency at %d tools (the catalogue repeated under renamed servers)\n", len(big))
	fmt.Fprintf(out, "  Build %v; Search over 200 queries: median %v, p90 %v\n",
		built.Round(time.Millisecond), med.Round(time.Microsecond), p90.Round(time.Microsecond))
	return nil
}
