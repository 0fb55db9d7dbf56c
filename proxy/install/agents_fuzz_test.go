package install_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/install"
)

// FuzzAgentConfig: whatever the user's configuration file holds (Codex's
// config.toml, Gemini's settings.json, OpenCode's opencode.json), install
// either refuses it with ErrConflict and changes nothing, or wires it so that
// a second run changes nothing and uninstall gives the file back byte for
// byte (but for an empty container written with white space inside, which
// comes back as {} or []).
func FuzzAgentConfig(f *testing.F) {
	seeds := []struct {
		kind uint8
		src  string
	}{
		{0, "model = \"o3\"\n[features]\nx = true\n"},
		{0, "# c\r\n[mcp_servers.a]\r\ncommand = 'a'"},
		{1, "{\n  // c\n  \"tools\": {\"exclude\": [\"web_fetch\"]}\n}\n"},
		{1, "{\"mcpServers\":{}}"},
		{2, "{\n  \"permission\": {\"webfetch\": \"ask\",},\n}"},
		{2, "{\"mcp\":{\"servers\":{}}}"},
	}
	for _, s := range seeds {
		f.Add(s.kind, s.src)
	}
	files := []string{filepath.Join(".codex", "config.toml"), filepath.Join(".gemini", "settings.json"), "opencode.json"}
	agents := []string{install.AgentCodex, install.AgentGemini, install.AgentOpenCode}
	emptyWS := regexp.MustCompile(`[{\[][ \t\r\n]+[}\]]`)
	f.Fuzz(func(t *testing.T, kind uint8, src string) {
		k := int(kind) % 3
		root, bin := project(t, map[string]string{files[k]: src})
		home := filepath.Join(filepath.Dir(root), "home")
		o := install.Options{Project: root, Proxy: bin, NoClaudeCLI: true, Agent: agents[k], Path: home, Yes: true, StateDir: filepath.Join(filepath.Dir(root), "state"),
			CodexHome: filepath.Join(home, "codex"), GeminiTrust: filepath.Join(home, "gemini", "trusted.json")}
		before := snapshot(t, root)
		ctx := context.Background()
		if _, err := install.Setup(ctx, o); err != nil {
			if !errors.Is(err, catalog.ErrConflict) {
				t.Fatalf("install into %q: %v", src, err)
			}
			sameTree(t, "after a refused install", snapshot(t, root), before)
			return
		}
		first := snapshot(t, root)
		if _, err := install.Setup(ctx, o); err != nil {
			t.Fatalf("second install into %q: %v", src, err)
		}
		sameTree(t, "second install", snapshot(t, root), first)
		if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); err != nil {
			t.Fatalf("uninstall from %q: %v", src, err)
		}
		got, err := os.ReadFile(filepath.Join(root, files[k]))
		if err != nil {
			t.Fatalf("uninstall removed the user's %s: %v", files[k], err)
		}
		if string(got) != src && !(k > 0 && emptyWS.MatchString(src)) {
			t.Fatalf("install+uninstall changed\n%q\ninto\n%q", src, got)
		}
		if _, err := os.Lstat(home); err == nil {
			if _, err := os.ReadDir(home); err == nil {
				entries, _ := os.ReadDir(home)
				if len(entries) > 0 {
					t.Fatalf("uninstall left %v in the home", entries)
				}
			}
		}
	})
}
