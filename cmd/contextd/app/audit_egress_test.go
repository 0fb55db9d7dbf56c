package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/daemon/audit"
)

// The records of the audit log's forms, decoded from JSON as they are stored.
const (
	// A safe_bash call through the egress proxy: one download allowed,
	// one host refused.
	egressCallJSON = `{"session":"s1","tool":"safe_bash","args":{"command":"npm ci"},` +
		`"sandbox":{"namespaces":true,"seccomp":"embedded:safe_bash.json","network":"egress proxy","egress_rules":"/home/u/.config/contextd/config.toml"},` +
		`"duration_ms":900,"egress":[` +
		`{"host":"registry.npmjs.org","port":443,"method":"GET","via":"connect","allowed":true,"rule":"registry.npmjs.org GET,HEAD","source":"npm registry (default)","bytes_out":310,"bytes_in":48213},` +
		`{"host":"example.com","port":443,"via":"connect","allowed":false,"reason":"no rule allows it"}]}`
	// The same call as contextd wrote it before the proxy was named: the
	// network "none", each refused host a warning line as well.
	oldEgressCallJSON = `{"session":"s1","tool":"safe_bash","args":{"command":"npm ci"},` +
		`"sandbox":{"namespaces":true,"seccomp":"embedded:safe_bash.json","network":"none"},` +
		`"warnings":["egress refused example.com:443: no rule allows it; to allow it, add to ~/.config/contextd/config.toml: [tools.safe_bash] egress_allow = [\"example.com:443\"]"],` +
		`"egress":[{"host":"example.com","port":443,"via":"connect","allowed":false,"reason":"no rule allows it"}]}`
	// A wrapped MCP server's connections, written when it ended.
	serverEgressJSON = `{"kind":"egress","session":"s2","tool":"mcp:gh","sandbox":{"network":"egress proxy","egress_rules":"defaults (no configuration file)"},` +
		`"duration_ms":4000,"egress":[{"host":"api.github.com","port":443,"via":"connect","allowed":true,"rule":"api.github.com:443","source":"egress.allow"}]}`
)

func egressLog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "audit")
	l, err := audit.Open(&audit.Options{Dir: dir, Journal: audit.JournalOff})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, s := range []string{egressCallJSON, oldEgressCallJSON, serverEgressJSON} {
		var r audit.Record
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		if err := l.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// `audit show` names the egress proxy and where its rules come from, and
// lists each connection on a line of its own; a record of the old form
// shows its connections the same way, and verifies.
func TestAuditShowEgress(t *testing.T) {
	dir := egressLog(t)
	blocks := showBlocks(t, dir, 3)
	for i, c := range []struct{ want, not []string }{
		{want: []string{
			"  sandbox     namespaces, seccomp embedded:safe_bash.json, no scope, network egress proxy (rules: /home/u/.config/contextd/config.toml)\n",
			"  connection  GET registry.npmjs.org:443 allowed by registry.npmjs.org GET,HEAD (npm registry (default)), via connect, 310B out, 48.2kB in\n",
			"  connection  example.com:443 refused: no rule allows it, via connect\n",
		}, not: []string{"warning", "network none"}},
		{want: []string{
			"network egress proxy (rules: not recorded)\n",
			"  connection  example.com:443 refused: no rule allows it, via connect\n",
			"  warning     egress refused example.com:443",
		}},
		{want: []string{
			"  egress\n",
			"  tool        mcp:gh\n",
			"  session     s2\n",
			"  network     egress proxy (rules: defaults (no configuration file))\n",
			"  connection  api.github.com:443 allowed by api.github.com:443 (egress.allow), via connect\n",
		}, not: []string{"reason"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(blocks[i], w) {
				t.Errorf("record %d lacks %q:\n%s", i+1, w, blocks[i])
			}
		}
		for _, n := range c.not {
			if strings.Contains(blocks[i], n) {
				t.Errorf("record %d shows %q:\n%s", i+1, n, blocks[i])
			}
		}
	}

	out, _, err := run(t, "tail", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"  #1 safe_bash exit=0 900ms 0B 0tok egress=2 egress-refused=1 session=s1 ",
		"  #2 safe_bash exit=0 0s 0B 0tok egress=1 egress-refused=1 session=s1 ",
		"  #3 egress mcp:gh egress=1 session=s2\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("tail lacks %q:\n%s", w, out)
		}
	}

	if out, _, err := run(t, "verify", "--dir", dir); err != nil || !strings.HasPrefix(out, "ok  ") {
		t.Errorf("verify: %v\n%s", err, out)
	}
}

// A log written by contextd before the proxy was named in records (commit
// f1eee80, testdata/audit-f1eee80, the bytes as that code wrote them, not
// re-appended): it verifies, and shows its connections as the proxy's;
// a record without connections keeps its network as written.
func TestAuditOldLogVerifiesAndShows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	if err := os.CopyFS(dir, os.DirFS("testdata/audit-f1eee80")); err != nil {
		t.Fatal(err)
	}
	// As the daemon keeps them: the user's alone.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		os.Chmod(filepath.Join(dir, e.Name()), 0o600)
	}
	if out, _, err := run(t, "verify", "--dir", dir); err != nil || !strings.HasPrefix(out, "ok  ") {
		t.Fatalf("verify of the old log: %v\n%s", err, out)
	}
	blocks := showBlocks(t, dir, 3)
	for i, want := range [][]string{
		{"network egress proxy (rules: not recorded)", "  connection  example.com:443 refused: no rule allows it, via connect\n",
			"  connection  GET registry.npmjs.org:443 allowed by registry.npmjs.org GET,HEAD, via connect"},
		{"  tool        mcp:gh\n", "  connection  api.github.com:443 allowed by api.github.com:443, via connect\n"},
		{"network none"},
	} {
		for _, w := range want {
			if !strings.Contains(blocks[i], w) {
				t.Errorf("record %d lacks %q:\n%s", i+1, w, blocks[i])
			}
		}
	}
}

// showBlocks is `audit show` of dir, one block a record, which must be n.
func showBlocks(t *testing.T, dir string, n int) []string {
	t.Helper()
	out, _, err := run(t, "show", "--dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(out, "\n\n")
	if len(blocks) != n {
		t.Fatalf("show printed %d blocks:\n%s", len(blocks), out)
	}
	return blocks
}
