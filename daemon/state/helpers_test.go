package state

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/budget"
	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/sqlite"
	"github.com/contextd/contextd/daemon/toolcall"
	"github.com/contextd/contextd/workspace"
)

// openStore opens a fresh embedded store for one test.
func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(&sqlite.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newEnv is a call's environment in project root and session.
func newEnv(st store.Store, root, session string) *Env {
	return &Env{
		Place:   workspace.Place{Root: root, Cwd: root},
		Session: session,
		Store:   st,
		Counter: budget.Default(),
		Out:     &bytes.Buffer{},
	}
}

// toolNamed returns the state tool called name.
func toolNamed(t *testing.T, name string) toolcall.Tool[*Env] {
	t.Helper()
	for _, tl := range Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no state tool %s", name)
	return nil
}

// call decodes input (a JSON string, or any other value to encode) for tool
// and runs it in env, returning its output and error.
func call(t *testing.T, env *Env, tool string, input any) (string, error) {
	t.Helper()
	raw, ok := input.(string)
	if !ok {
		b, err := json.Marshal(input)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	c, err := toolNamed(t, tool).Decode([]byte(raw))
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	env.Out = &out
	o := c.Run(context.Background(), env)
	return out.String(), o.Err
}

// mustCall is call for a call that must succeed.
func mustCall(t *testing.T, env *Env, tool string, input any) string {
	t.Helper()
	out, err := call(t, env, tool, input)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, input, err)
	}
	return out
}

// word returns the i-th white-space separated word of s, without a trailing
// colon.
func word(t *testing.T, s string, i int) string {
	t.Helper()
	f := strings.Fields(s)
	if len(f) <= i {
		t.Fatalf("no word %d in %q", i, s)
	}
	return strings.TrimSuffix(f[i], ":")
}

type obj = map[string]any

// lesson is a valid memory_store input.
func lesson(title, description, content string) obj {
	return obj{"title": title, "description": description, "content": content, "outcome": "success"}
}
