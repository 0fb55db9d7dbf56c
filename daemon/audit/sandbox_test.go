package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/contextd/contextd/sandboxinfo"
)

// oldSandbox is the "sandbox" member as the log wrote it before Sandbox
// became sandboxinfo.Layers, and oldForm the daemon's conversion into it.
type oldSandbox struct {
	Namespaces bool   `json:"namespaces,omitempty"`
	Seccomp    string `json:"seccomp,omitempty"`
	Scope      string `json:"scope,omitempty"`
	ScopeNote  string `json:"scope_note,omitempty"`
	Network    string `json:"network,omitempty"`
}

func oldForm(l sandboxinfo.Layers) oldSandbox {
	net := "none"
	if l.Network {
		net = "host"
	}
	if !l.Namespaces {
		net = ""
	}
	return oldSandbox{Namespaces: l.Namespaces, Seccomp: l.Seccomp, Scope: l.Scope, ScopeNote: l.ScopeNote, Network: net}
}

func encode(t *testing.T, v any, escapeHTML bool) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// Records are hash-chained files users already have: a record's sandbox
// member is written byte for byte as before, left out when it was, and an
// old member reads back as the layers it was written from.
func TestSandboxMemberUnchanged(t *testing.T) {
	for _, l := range []sandboxinfo.Layers{
		{},
		{Network: true}, // no namespaces: the old form had no network, and so nothing
		{Namespaces: true, Seccomp: "embedded:safe_bash.json", Scope: "contextd-safe_bash-7.scope"},
		{Namespaces: true, Seccomp: "file:/home/u/.config/contextd/profiles/safe_bash.json", Network: true},
		{Namespaces: true, Seccomp: "embedded:safe_read.json", ScopeNote: "no user manager: <dbus> & \"systemd\""},
		{Seccomp: "embedded:mcp-server.json"},
	} {
		for _, esc := range []bool{false, true} {
			got := encode(t, struct {
				Sandbox Sandbox `json:"sandbox,omitzero"`
			}{Sandbox{Layers: l}}, esc)
			want := encode(t, struct {
				Sandbox oldSandbox `json:"sandbox,omitzero"`
			}{oldForm(l)}, esc)
			if got != want {
				t.Errorf("%+v (escape HTML %v): %s, was %s", l, esc, got, want)
			}
		}
		var back Sandbox
		if err := json.Unmarshal([]byte(encode(t, oldForm(l), false)), &back); err != nil {
			t.Fatal(err)
		}
		// Only the network of a call without namespaces is not written.
		if want := (Sandbox{Layers: l}); (l.Namespaces || !l.Network) && back != want {
			t.Errorf("%+v reads back as %+v", l, back)
		}
	}
}
