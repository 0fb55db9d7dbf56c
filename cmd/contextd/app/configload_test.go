package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
)

// Every command that reads the configuration refuses one that a feature
// refuses (not only one that does not decode), naming the file and the key,
// before it does anything else.
func TestCommandsRefuseWhatAFeatureRefuses(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"egress.allow":           "[egress]\nallow = [\"*\"]\n",
		"home.presets_off":       "[home]\npresets_off = [\"gov\"]\n",
		"mcp.intercept.rules[0]": "[[mcp.intercept.rules]]\nname = \"x\"\naction = \"explode\"\n",
		"salience.rules":         "[[salience.rules]]\nname = \"q\"\npattern = \"(\"\n",
	}
	for key, content := range files {
		p := filepath.Join(dir, strings.NewReplacer("[", "", "]", "").Replace(key)+".toml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"cache", "list"},
			{"sandbox", "show", dir},
			{"serve", "--allow-root", "--socket", filepath.Join(dir, "never.sock")},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			root := Command()
			root.SetArgs(append(args, "--config", p))
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			err := root.ExecuteContext(ctx)
			cancel()
			if !errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), p) {
				t.Errorf("%s with %s refused: %v; want %s naming the file and the key", args[:2], key, err, catalog.ErrConfig.Code)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never.sock")); err == nil {
		t.Error("serve bound its socket with a configuration it refuses")
	}
}
