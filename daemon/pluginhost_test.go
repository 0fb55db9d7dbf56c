package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/daemon/store"
	"github.com/contextd/contextd/daemon/store/sqlite"
	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/wire/toolplugin"
)

// A plugin's ToolHost acts on its call's project and session only, and
// what a tool stores is scrubbed before it reaches the store.
func TestPluginHostScopesAndScrubs(t *testing.T) {
	st, err := sqlite.Open(&sqlite.Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const secret = "AKIAZZZZZZZZZZZZZZZZ"
	scrub := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(secret), []byte("[REDACTED]")) }
	var logged bytes.Buffer
	host := func(project string) *pluginHost {
		return &pluginHost{log: slog.New(slog.NewTextHandler(&logged, nil)), scrub: scrub, project: project, session: "s1", tool: "probe",
			allow: toolmanifest.HostServices,
			store: func(context.Context) (store.Store, error) { return st, nil }}
	}
	ctx := context.Background()
	a, b := host("/proj/a"), host("/proj/b")

	id, err := a.MemoryStore(ctx, &toolplugin.MemoryStoreRequest{Text: "deploys need the staging key " + secret, Tags: []string{"Deploy", "deploy"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMemory(ctx, id.GetId(), []string{"/proj/a"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.Content+m.Title, secret) || !strings.Contains(m.Content, "[REDACTED]") {
		t.Errorf("stored memory holds the secret: %+v", m)
	}
	if len(m.Tags) != 1 || m.Tags[0] != "deploy" {
		t.Errorf("tags %v, want [deploy]", m.Tags)
	}
	found, err := a.MemorySearch(ctx, &toolplugin.MemorySearchRequest{Query: "staging key deploys"})
	if err != nil || len(found.GetMemories()) != 1 {
		t.Fatalf("search in its project: %v %v", found, err)
	}
	other, err := b.MemorySearch(ctx, &toolplugin.MemorySearchRequest{Query: "staging key deploys"})
	if err != nil || len(other.GetMemories()) != 0 {
		t.Fatalf("another project's search found %v (%v)", other, err)
	}

	cp, err := a.CheckpointSave(ctx, &toolplugin.CheckpointSaveRequest{Name: "n", StateJson: []byte(`{"k":"` + secret + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	back, err := a.CheckpointRestore(ctx, &toolplugin.CheckpointRestoreRequest{Id: cp.GetId(), Level: "full"})
	if err != nil {
		t.Fatal(err)
	}
	if string(back.GetStateJson()) != `{"k":"[REDACTED]"}` {
		t.Errorf("restored state %q", back.GetStateJson())
	}
	if _, err := b.CheckpointRestore(ctx, &toolplugin.CheckpointRestoreRequest{Id: cp.GetId()}); status.Code(err) != codes.NotFound {
		t.Errorf("another project restored the checkpoint: %v", err)
	}
	if _, err := a.Log(ctx, &toolplugin.LogRequest{Level: "warn", Message: "saw " + secret}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logged.String(), secret) || !strings.Contains(logged.String(), "plugin: saw [REDACTED]") {
		t.Errorf("log line: %q", logged.String())
	}
	if _, err := a.Log(ctx, &toolplugin.LogRequest{Level: "loud"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("unknown level: %v", err)
	}

	// A tool approved for none of them is refused each, scrub and log
	// still served.
	none := host("/proj/a")
	none.allow = nil
	if _, err := none.MemorySearch(ctx, &toolplugin.MemorySearchRequest{Query: "staging"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("memory search without memory-read: %v", err)
	}
	if _, err := none.MemoryStore(ctx, &toolplugin.MemoryStoreRequest{Text: "x"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("memory store without memory-write: %v", err)
	}
	if _, err := none.CheckpointRestore(ctx, &toolplugin.CheckpointRestoreRequest{Id: cp.GetId()}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("checkpoint restore without checkpoints: %v", err)
	}
	if _, err := none.Scrub(ctx, &toolplugin.ScrubRequest{Text: []byte(secret)}); err != nil {
		t.Errorf("scrub: %v", err)
	}
}
