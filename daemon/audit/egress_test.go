package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/contextd/contextd/sandboxinfo"
)

// egressCall is a safe_bash call whose command went through the egress
// proxy, in the form its record takes in the file: one download allowed by
// a registry rule, one host refused. The test decodes it rather than filling
// the fields, so the form on disk is what it pins down.
const egressCall = `{"session":"s1","tool":"safe_bash","args":{"command":"npm install; curl https://example.com/"},` +
	`"sandbox":{"namespaces":true,"seccomp":"embedded:safe_bash.json","scope":"contextd-safe_bash-1.scope",` +
	`"network":"egress proxy","egress_rules":"/home/u/.config/contextd/config.toml"},` +
	`"duration_ms":900,"egress":[` +
	`{"host":"registry.npmjs.org","port":443,"method":"GET","via":"connect","allowed":true,"rule":"registry.npmjs.org GET,HEAD",` +
	`"source":"npm registry (default)","intercepted":true,"bytes_out":310,"bytes_in":48213},` +
	`{"host":"example.com","port":443,"via":"connect","allowed":false,"reason":"no rule allows it"}]}`

func decodeRecord(t *testing.T, s string) *Record {
	t.Helper()
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// A call that went through the egress proxy is recorded as such: its
// network is the proxy, with where its rules come from, and its
// connections are a list of their own, not warnings. The record verifies
// and reads back the same.
func TestEgressCallRecord(t *testing.T) {
	o := testOptions(t)
	l := openTest(t, o)
	defer l.Close()
	if err := l.Append(decodeRecord(t, egressCall)); err != nil {
		t.Fatal(err)
	}
	files := logNames(t, o.Dir)
	line := readLines(t, o.Dir+"/"+files[0])[0]
	for _, want := range []string{
		`"sandbox":{"namespaces":true,"seccomp":"embedded:safe_bash.json","scope":"contextd-safe_bash-1.scope","network":"egress proxy","egress_rules":"/home/u/.config/contextd/config.toml"}`,
		`"egress":[{"host":"registry.npmjs.org","port":443,"method":"GET",`,
		`{"host":"example.com","port":443,"via":"connect","allowed":false,"reason":"no rule allows it"}]`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("the stored record lacks %s:\n%s", want, line)
		}
	}
	if strings.Contains(line, `"warnings"`) {
		t.Errorf("the connections were stored as warnings too:\n%s", line)
	}
	if rep, err := Verify(o.Dir); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("Verify: %v %v", err, rep.Problems)
	}
	es, err := Tail(o.Dir, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("Tail: %v %v", es, err)
	}
	if got := es[0].Sandbox.NetworkMode(); got != "egress proxy" {
		t.Errorf("read back, the network is %q, want %q", got, "egress proxy")
	}
	if len(es[0].Egress) != 2 || es[0].Egress[1].Allowed || es[0].Egress[0].BytesIn != 48213 {
		t.Errorf("read back, the connections are %+v", es[0].Egress)
	}
}

// The journal's copy names the network and carries the connections in
// fields of their own; the one-line summary counts them.
func TestEgressJournal(t *testing.T) {
	l := openTest(t, testOptions(t))
	defer l.Close()
	var got []sent
	l.send = func(msg string, pri journal.Priority, vars map[string]string) error {
		got = append(got, sent{msg, pri, vars})
		return nil
	}
	if err := l.Append(decodeRecord(t, egressCall)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("sent %d entries", len(got))
	}
	v := got[0].vars
	for k, want := range map[string]string{
		"CONTEXTD_NETWORK":            "egress proxy",
		"CONTEXTD_EGRESS_RULES":       "/home/u/.config/contextd/config.toml",
		"CONTEXTD_EGRESS_CONNECTIONS": "2",
		"CONTEXTD_EGRESS_REFUSED":     "1",
		"CONTEXTD_EGRESS":             "GET registry.npmjs.org:443 allowed by registry.npmjs.org GET,HEAD (npm registry (default)), via connect, intercepted, 310B out, 48.2kB in; example.com:443 refused: no rule allows it, via connect",
		"CONTEXTD_WARNINGS":           "", // nothing that is not a warning
	} {
		if v[k] != want {
			t.Errorf("%s = %q, want %q", k, v[k], want)
		}
	}
	for k := range v {
		if !fieldName.MatchString(k) {
			t.Errorf("%s is not a journal field name", k)
		}
	}
	if want := " egress=2 egress-refused=1 session=s1 "; !strings.Contains(got[0].msg, want) {
		t.Errorf("message %q lacks %q", got[0].msg, want)
	}
}

// A wrapped server's egress record (written when the server ends) says the
// same, on one line too.
func TestEgressServerRecord(t *testing.T) {
	r := decodeRecord(t, `{"kind":"egress","session":"s2","tool":"mcp:gh","sandbox":{"network":"egress proxy","egress_rules":"defaults (no configuration file)"},`+
		`"duration_ms":4000,"egress":[{"host":"api.github.com","port":443,"via":"connect","allowed":true,"rule":"api.github.com:443","source":"egress.allow"}]}`)
	r.Seq = 7
	if got, want := r.Summary(), "#7 egress mcp:gh egress=1 session=s2"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	v := journalFields(r)
	for k, want := range map[string]string{
		"CONTEXTD_KIND":               "egress",
		"CONTEXTD_TOOL":               "mcp:gh",
		"CONTEXTD_SESSION":            "s2",
		"CONTEXTD_NETWORK":            "egress proxy",
		"CONTEXTD_EGRESS_RULES":       "defaults (no configuration file)",
		"CONTEXTD_EGRESS_CONNECTIONS": "1",
		"CONTEXTD_EGRESS":             "api.github.com:443 allowed by api.github.com:443 (egress.allow), via connect",
	} {
		if v[k] != want {
			t.Errorf("%s = %q, want %q", k, v[k], want)
		}
	}
}

// The sandbox member of a call through the proxy, and back; a member that
// names the proxy without its rules (no contextd writes one) still reads as
// the proxy.
func TestSandboxEgressMember(t *testing.T) {
	for _, c := range []struct {
		s    Sandbox
		want string
	}{
		{Sandbox{Layers: sandboxinfo.Layers{Namespaces: true, Seccomp: "embedded:safe_bash.json"}, EgressRules: "/home/u/.config/contextd/config.toml"},
			`{"namespaces":true,"seccomp":"embedded:safe_bash.json","network":"egress proxy","egress_rules":"/home/u/.config/contextd/config.toml"}`},
		{Sandbox{EgressRules: "defaults (no configuration file)"}, // a wrapped server's egress record
			`{"network":"egress proxy","egress_rules":"defaults (no configuration file)"}`},
		{Sandbox{Layers: sandboxinfo.Layers{Namespaces: true}},
			`{"namespaces":true,"network":"none"}`},
	} {
		b, err := json.Marshal(c.s)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v: %s (%v), want %s", c.s, b, err, c.want)
		}
		var back Sandbox
		if err := json.Unmarshal(b, &back); err != nil || back != c.s {
			t.Errorf("%s reads back as %+v (%v)", b, back, err)
		}
	}
	var s Sandbox
	if err := json.Unmarshal([]byte(`{"namespaces":true,"network":"egress proxy"}`), &s); err != nil || s.NetworkMode() != NetworkEgress || s.EgressRules != rulesNotRecorded {
		t.Errorf("a proxy without its rules reads as %+v (%v)", s, err)
	}
}
