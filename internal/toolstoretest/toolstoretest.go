// Package toolstoretest writes a real tool store for the tests of its readers (install, the MCP server, the proxy): the lock, and each tool's directory with its approved manifest, schema.json and TOOL.md.
package toolstoretest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextd/contextd/toolmanifest"
	"github.com/contextd/contextd/toolstore"
)

// Tool is one installed tool to write.
type Tool struct {
	Name        string
	Description string // one line; the approved manifest's
	Schema      string // schema.json
	Doc         string // TOOL.md; "" writes none
}

// Write installs tools into a store at root and returns it. Each tool's
// approved manifest is parsed back as the runtime would, so the store is
// one contextd itself could have written.
func Write(t testing.TB, root string, tools ...Tool) toolstore.Store {
	t.Helper()
	s := toolstore.Store{Root: root}
	for _, tool := range tools {
		dir := filepath.Join(root, tool.Name, "0123456789abcdef")
		if err := os.MkdirAll(filepath.Join(dir, toolstore.TreeDir), 0o755); err != nil {
			t.Fatal(err)
		}
		approved := fmt.Sprintf("name = %q\ndescription = %q\nschema = %q\n[run]\ncommand = [\"bin/%s\"]\n",
			tool.Name, tool.Description, toolstore.SchemaName, tool.Name)
		if _, err := toolmanifest.Parse([]byte(approved)); err != nil {
			t.Fatalf("toolstoretest: manifest of %s: %v", tool.Name, err)
		}
		files := map[string]string{toolstore.ApprovedName: approved, toolstore.SchemaName: tool.Schema}
		if tool.Doc != "" {
			files[toolstore.DocName] = tool.Doc
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rel, _ := filepath.Rel(root, dir)
		err := s.Update(func(l *toolstore.Lock) error {
			l.Tools[tool.Name] = &toolstore.Tool{Name: tool.Name, Source: "./" + tool.Name, Resolved: "tree:0", Checksum: "sha256:0", Dir: rel, Installed: time.Unix(0, 0).UTC()}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Remove takes name out of the store's lock, as `contextd tool remove`
// does, leaving its directory.
func Remove(t testing.TB, s toolstore.Store, name string) {
	t.Helper()
	if err := s.Update(func(l *toolstore.Lock) error { delete(l.Tools, name); return nil }); err != nil {
		t.Fatal(err)
	}
}
