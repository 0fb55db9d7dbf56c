package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/toolsearch/toolbench"
)

func TestRunDefault(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-split", "dev", "-k", "10"}, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"contextd", "bm25", "exact", "R@3", "R@10", "search mode on", "latency at 1000 tools",
		"queries2.jsonl over servers+servers2", "split dev2", "queries3.jsonl over servers+servers2: held out whole"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRunHeldOut: the test split reports the third set, held out whole.
func TestRunHeldOut(t *testing.T) {
	var b strings.Builder
	if err := run([]string{"-split", "test"}, &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"split test2", "queries3.jsonl over servers+servers2", "split test3"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRunBadInput: every refusal names what was wrong and where.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	servers := filepath.Join(dir, "servers")
	broken := filepath.Join(dir, "broken")
	for _, d := range []string{servers, broken} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write("servers/s.json", `{"tools":[{"name":"ping","description":"check it answers"}]}`)
	write("broken/b.json", "{\n  \"tools\": [\n    {\"name\": 1}\n  ]\n}")
	good := write("good.jsonl", `{"q":"is it up","expect":["s.ping"]}`+"\n")
	badLine := write("bad.jsonl", `{"q":"is it up","expect":["s.ping"]}`+"\n\n"+`{"q": "x",`+"\n")
	unknown := write("unknown.jsonl", `{"q":"is it up","expect":["s.ping"]}`+"\n"+`{"q":"y","expect":["s.pong"]}`+"\n")
	for _, c := range []struct {
		args []string
		want string
		is   error
	}{
		{[]string{"-fixtures", servers, "-queries", badLine}, badLine + ":3:", nil},
		{[]string{"-fixtures", servers, "-queries", unknown}, unknown + ":2:", toolbench.ErrUnknownTool},
		{[]string{"-fixtures", broken, "-queries", good}, "b.json:3:", nil},
		{[]string{"-fixtures", filepath.Join(dir, "empty"), "-queries", good}, "empty", nil},
		{[]string{"-split", "train"}, "-split", errUsage},
		{[]string{"-k", "0"}, "-k", errUsage},
	} {
		err := run(c.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("%v: %v, want an error with %q", c.args, err, c.want)
		}
	}
	if err := run([]string{"-fixtures", servers, "-queries", good}, io.Discard); err != nil {
		t.Errorf("outside catalogue and queries: %v", err)
	}
}
