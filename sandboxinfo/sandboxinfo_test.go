package sandboxinfo

import (
	"encoding/json"
	"testing"
)

// The light protocol carries Layers as they are; proxy and daemon of one
// version agree on it, and so does every --format json output a script
// reads. The form must not drift.
func TestJSON(t *testing.T) {
	for _, c := range []struct {
		l    Layers
		want string
	}{
		{Layers{}, `{"namespaces":false}`},
		{Layers{Namespaces: true, Seccomp: "embedded:safe_bash.json", Scope: "contextd-safe_bash-1.scope", Network: true},
			`{"namespaces":true,"seccomp":"embedded:safe_bash.json","scope":"contextd-safe_bash-1.scope","network":true}`},
		{Layers{Namespaces: true, Seccomp: "embedded:safe_read.json", ScopeNote: "no user manager"},
			`{"namespaces":true,"seccomp":"embedded:safe_read.json","scope_note":"no user manager"}`},
	} {
		b, err := json.Marshal(c.l)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v: %s (%v), want %s", c.l, b, err, c.want)
		}
		var back Layers
		if err := json.Unmarshal(b, &back); err != nil || back != c.l {
			t.Errorf("%s decodes to %+v (%v)", b, back, err)
		}
	}
}
