//go:build e2e

package e2e

// The salience pass (issue 18, "Done when"): a corpus of real failing logs,
// generated here by really running test suites with an injected failure
// (e2e/salcorpus: a Go module's suite with an assertion, a panic and a
// compile error, mocha, unittest, cargo test, a CI-style script with its
// failure in the middle, npm install around one error). In every case the
// first response of `safe_bash 'cat LOG'` and of `safe_read LOG`, at the
// default budget of 2,000 tokens, must show the failure; the same corpus
// read with the salience pass off (head and tail only) is measured beside
// it. A passing verbose run's first page costs at most a quarter of what
// head and tail cost, and its pages still reassemble to the log.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/e2e/salcorpus"
)

var corpus struct {
	once  sync.Once
	cases []salcorpus.Case
	dir   string // the logs, in the project: budget-corpus/NAME.log
	err   error
}

// salienceCorpus generates the corpus once per run (as root, in a scratch
// directory), and copies the logs into the project for the test user.
func salienceCorpus(t *testing.T) ([]salcorpus.Case, string) {
	t.Helper()
	corpus.once.Do(func() {
		work, err := os.MkdirTemp("", "contextd-salcorpus-")
		if err != nil {
			corpus.err = err
			return
		}
		cases, skipped, err := salcorpus.Generate(context.Background(), work)
		if err != nil {
			corpus.err = err
			return
		}
		if len(skipped) > 0 {
			corpus.err = errorsFromSkipped(skipped)
			return
		}
		corpus.cases = cases
		corpus.dir = filepath.Join(env.project, "budget-corpus")
		if r := userSh(nil, "rm -rf "+shq(corpus.dir)+" && mkdir -p "+shq(corpus.dir)); r.code != 0 {
			corpus.err = errorsFromSkipped(map[string]string{"mkdir": r.String()})
			return
		}
		for _, c := range cases {
			p := filepath.Join(corpus.dir, c.Name+".log")
			if err := os.WriteFile(p, c.Log, 0o644); err != nil {
				corpus.err = err
				return
			}
			os.Chown(p, env.uid, env.uid)
		}
		os.RemoveAll(work)
	})
	if corpus.err != nil {
		t.Fatalf("generating the corpus: %v", corpus.err)
	}
	return corpus.cases, corpus.dir
}

type skippedErr map[string]string

func (s skippedErr) Error() string {
	var b strings.Builder
	for k, v := range s {
		b.WriteString(k + ": " + v + "; ")
	}
	return "cases not run (their toolchain is missing here): " + b.String()
}

func errorsFromSkipped(m map[string]string) error { return skippedErr(m) }

// shown says which of the case's failure lines the page shows.
func shown(page string, c salcorpus.Case) (n int, missing []string) {
	for _, f := range c.Failure {
		if strings.Contains(page, f) {
			n++
		} else {
			missing = append(missing, f)
		}
	}
	return n, missing
}

// firstPages reads every log of the corpus with safe_bash and safe_read at
// the default budget, and returns, per case and tool, the envelope.
func firstPages(t *testing.T, cases []salcorpus.Case) map[string]envelope {
	out := map[string]envelope{}
	for _, c := range cases {
		rel := "budget-corpus/" + c.Name + ".log"
		out[c.Name+" safe_bash"] = jsonTool(t, nil, "safe_bash", "", "--max-tokens", "2000", "cat "+rel)
		out[c.Name+" safe_read"] = jsonTool(t, nil, "safe_read", "", "--max-tokens", "2000", rel)
	}
	return out
}

func TestSalienceCorpus(t *testing.T) {
	cases, _ := salienceCorpus(t)
	// The suite's configuration, salience at its default (on).
	withConfig(t, "")
	on := firstPages(t, cases)
	// The same corpus with the pass off: head and tail, as before.
	withConfig(t, "[salience]\nenabled = false\n")
	off := firstPages(t, cases)

	headTailShows := 0
	for _, c := range cases {
		for _, tool := range []string{"safe_bash", "safe_read"} {
			k := c.Name + " " + tool
			e, o := on[k], off[k]
			if e.Error != nil || e.TokensUsed > 2000 {
				t.Errorf("%s: error %+v, %d tokens", k, e.Error, e.TokensUsed)
				continue
			}
			n, missing := shown(e.Data, c)
			nOff, _ := shown(o.Data, c)
			if !c.Passing && nOff > 0 {
				headTailShows++
			}
			t.Logf("%-26s salience: %d/%d failure lines, %4d tokens | head+tail: %d/%d, %4d tokens",
				k, n, len(c.Failure), e.TokensUsed, nOff, len(c.Failure), o.TokensUsed)
			if n > 0 && len(missing) > 0 {
				t.Errorf("%s: the first page shows %d of the failure lines; not %q:\n%s", k, n, missing, e.Data)
			}
			if !c.Passing && n == 0 {
				t.Errorf("%s: the first page shows none of the failure lines %q:\n%s", k, missing, e.Data)
			}
		}
	}
	t.Logf("head and tail alone show a failure in %d of %d first pages", headTailShows, 2*(len(cases)-1))

	// A passing verbose run: the first page at most a quarter of head and
	// tail's, and its pages reassemble to the log byte for byte.
	for _, c := range cases {
		if !c.Passing {
			continue
		}
		for _, tool := range []string{"safe_read", "safe_bash"} {
			k := c.Name + " " + tool
			e, o := on[k], off[k]
			if e.TokensUsed*4 > o.TokensUsed {
				t.Errorf("%s: the first page costs %d tokens, more than a quarter of head and tail's %d:\n%s", k, e.TokensUsed, o.TokensUsed, e.Data)
			}
		}
		k := c.Name + " safe_bash"
		e := on[k]
		if !e.Truncated || e.Continue == "" {
			t.Fatalf("%s: not truncated (%d tokens)", k, e.TokensUsed)
		}
		pages := pageThrough(t, nil, "safe_bash", e.Continue, 2000)
		var whole strings.Builder
		for _, p := range pages {
			whole.WriteString(p.Data)
		}
		// The pages are the log scrubbed: the same bytes, but where a
		// placeholder stands for what looked like a secret.
		if !sameButPlaceholders(whole.String(), string(c.Log)) {
			t.Fatalf("%s: %d pages reassemble to %d bytes, the log has %d", k, len(pages), whole.Len(), len(c.Log))
		}
	}
}

var placeholder = regexp.MustCompile(`\[REDACTED:[a-z0-9-]+:[0-9]+\]`)

// sameButPlaceholders reports whether pages is log with some values of its
// lines replaced by placeholders.
func sameButPlaceholders(pages, log string) bool {
	if pages == log {
		return true
	}
	parts := placeholder.Split(pages, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	re, err := regexp.Compile(`\A` + strings.Join(parts, `[^\n]+?`) + `\z`)
	return err == nil && re.MatchString(log)
}
