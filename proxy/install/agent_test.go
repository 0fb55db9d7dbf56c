package install_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/proxy/agentfiles"
	"github.com/contextd/contextd/proxy/install"
	"github.com/contextd/contextd/toolspec"
)

// project makes a project root (with .git) holding files, and a proxy binary
// outside it.
func project(t *testing.T, files map[string]string) (root, bin string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(base, "proj")
	bin = filepath.Join(base, "bin", "contextd-proxy")
	for _, d := range []string{filepath.Join(root, ".git"), filepath.Dir(bin)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		writeFile(t, filepath.Join(root, p), c)
	}
	return root, bin
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// snapshot is every path under root with its content (files), target
// (symlinks) or "dir", and mode: what "nothing changed" and "byte-identical"
// compare.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[r] = "-> " + tgt
		case fi.IsDir():
			out[r] = "dir " + fi.Mode().Perm().String()
		default:
			b, _ := os.ReadFile(p)
			out[r] = fi.Mode().Perm().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: %s is missing", what, p)
		} else if g != w {
			t.Errorf("%s: %s differs:\n--- got\n%s\n--- want\n%s", what, p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s is left over", what, p)
		}
	}
}

func opts(root, bin string) install.Options {
	// Yes: these tests merge into the user's own configuration, which the
	// user agreed to (attack_test.go asks).
	return install.Options{Project: root, Proxy: bin, NoClaudeCLI: true, Yes: true, StateDir: filepath.Join(filepath.Dir(root), "state"),
		ToolStore: filepath.Join(filepath.Dir(root), "store")}
}

func decode(t *testing.T, what, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s is not valid JSON (%v):\n%s", what, err, s)
	}
	return v
}

func mcpValue(bin string) map[string]any {
	return map[string]any{"type": "stdio", "command": bin, "args": []any{"mcp"}, "env": map[string]any{}}
}

func hookValue(bin string) map[string]any {
	return map[string]any{
		"matcher": install.HookMatcher,
		"hooks":   []any{map[string]any{"type": "command", "command": bin + " hook"}},
	}
}

// obj returns m[key] as an object, creating it.
func obj(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}

// Install for Claude Code into projects with and without the user's own files:
// the user's content stays, ours is added; a second run changes no byte;
// uninstall gives back every file byte for byte (and removes what it created).
func TestSetupClaudeMergesAndUninstallRestores(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"fresh project", nil},
		{"indented files with user content", map[string]string{
			".mcp.json":             "{\n    \"mcpServers\": {\n        \"github\": {\n            \"command\": \"npx\",\n            \"args\": [\"-y\", \"@modelcontextprotocol/server-github\"]\n        }\n    },\n    \"zeta\": 1\n}\n",
			".claude/settings.json": "{\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"hooks\": {\n    \"PostToolUse\": [{\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", \"command\": \"gofmt.sh\"}]}]\n  }\n}\n",
			"CLAUDE.md":             "# Project\n\nRun `make test` before committing.",
		}},
		{"compact one-line files", map[string]string{
			".mcp.json":             `{"mcpServers":{"db":{"command":"pg-mcp","args":[]}}}`,
			".claude/settings.json": `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"audit.sh"}]}]},"model":"opus"}`,
			"CLAUDE.md":             "rules\n",
		}},
		{"CRLF and tabs", map[string]string{
			".mcp.json":             "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {\"command\": \"a\"}\r\n\t}\r\n}\r\n",
			".claude/settings.json": "{}",
			"CLAUDE.md":             "x\n\n",
		}},
		{"empty containers", map[string]string{
			".mcp.json":             `{"mcpServers": {}}`,
			".claude/settings.json": "{\n  \"hooks\": {\n    \"PreToolUse\": []\n  }\n}\n",
			"CLAUDE.md":             "",
		}},
		{"other keys only", map[string]string{
			".mcp.json":             "{\n  \"note\": \"servers come later\"\n}\n",
			".claude/settings.json": "{\n  \"env\": {\"FOO\": \"1\"}\n}\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, bin := project(t, tt.files)
			before := snapshot(t, root)
			ctx := context.Background()

			rep, err := install.Setup(ctx, opts(root, bin))
			if err != nil {
				t.Fatalf("install: %v (%+v)", err, rep)
			}
			if rep.Root != root {
				t.Errorf("root %s, want %s", rep.Root, root)
			}

			// .mcp.json: the user's members as they were, plus ours.
			want := map[string]any{}
			if s, ok := tt.files[".mcp.json"]; ok {
				want = decode(t, "the original .mcp.json", s)
			}
			obj(want, "mcpServers")["contextd"] = mcpValue(bin)
			if got := decode(t, ".mcp.json", readFile(t, filepath.Join(root, ".mcp.json"))); !reflect.DeepEqual(got, want) {
				t.Errorf(".mcp.json means\n%v\nwant\n%v", got, want)
			}
			// settings.json: the user's hooks and settings, plus one entry.
			want = map[string]any{}
			if s, ok := tt.files[".claude/settings.json"]; ok {
				want = decode(t, "the original settings.json", s)
			}
			hooks := obj(want, "hooks")
			pre, _ := hooks["PreToolUse"].([]any)
			hooks["PreToolUse"] = append(pre, hookValue(bin))
			if got := decode(t, "settings.json", readFile(t, filepath.Join(root, ".claude/settings.json"))); !reflect.DeepEqual(got, want) {
				t.Errorf("settings.json means\n%v\nwant\n%v", got, want)
			}
			// CLAUDE.md: the user's text first, untouched, then the section.
			md := readFile(t, filepath.Join(root, "CLAUDE.md"))
			if !strings.HasPrefix(md, tt.files["CLAUDE.md"]) {
				t.Errorf("CLAUDE.md lost the user's text:\n%s", md)
			}
			sec := md[len(tt.files["CLAUDE.md"]):]
			sec = strings.TrimLeft(sec, "\n")
			if !strings.HasPrefix(sec, install.SectionBegin) || !strings.HasSuffix(sec, install.SectionEnd+"\n") ||
				!strings.Contains(sec, "mcp__contextd__safe_bash") || !strings.Contains(sec, "--continue") {
				t.Errorf("CLAUDE.md section:\n%s", sec)
			}
			if u := tt.files["CLAUDE.md"]; u != "" && !strings.HasSuffix(md[:len(md)-len(sec)], "\n\n") {
				t.Errorf("no blank line between the user's text and the section:\n%q", md)
			}
			checkInstalled(t, filepath.Join(root, ".claude/tools"), bin)

			// A second run: not one byte (or mode) changes.
			first := snapshot(t, root)
			if _, err := install.Setup(ctx, opts(root, bin)); err != nil {
				t.Fatalf("second install: %v", err)
			}
			sameTree(t, "second install", snapshot(t, root), first)

			// Uninstall: the project as it was, byte for byte.
			urep, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true})
			if err != nil {
				t.Fatalf("uninstall: %v (%+v)", err, urep)
			}
			sameTree(t, "after uninstall", snapshot(t, root), before)
		})
	}
}

// What the user changed in our entries after install is theirs: uninstall
// leaves it, and takes back the rest.
func TestUninstallKeepsUserModifiedEntries(t *testing.T) {
	root, bin := project(t, map[string]string{
		".mcp.json": "{\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"}\n  }\n}\n",
	})
	ctx := context.Background()
	if _, err := install.Setup(ctx, opts(root, bin)); err != nil {
		t.Fatal(err)
	}
	edit := func(rel, old, new string) {
		t.Helper()
		p := filepath.Join(root, rel)
		s := readFile(t, p)
		if !strings.Contains(s, old) {
			t.Fatalf("%s lacks %q:\n%s", rel, old, s)
		}
		writeFile(t, p, strings.Replace(s, old, new, 1))
	}
	edit(".mcp.json", `"env": {}`, `"env": {"CONTEXTD_SESSION": "mine"}`)
	edit(".claude/settings.json", `"matcher": "`+install.HookMatcher+`"`, `"matcher": "Bash"`)
	edit("CLAUDE.md", "## contextd", "## contextd (our team's notes)")
	edit(".claude/tools/safe_bash/TOOL.md", "", "my notes\n")
	mine := snapshot(t, root)

	rep, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true})
	if err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	after := snapshot(t, root)
	for _, p := range []string{".mcp.json", ".claude/settings.json", "CLAUDE.md", ".claude/tools/safe_bash/TOOL.md"} {
		if after[p] != mine[p] {
			t.Errorf("uninstall changed %s, which the user edited:\n%s", p, after[p])
		}
	}
	for _, p := range []string{".claude/tools/safe_bash/safe_bash", ".claude/tools/safe_read/TOOL.md", install.AgentManifestName} {
		if _, ok := after[p]; ok {
			t.Errorf("uninstall left %s", p)
		}
	}
	var kept []string
	for _, a := range rep.Actions {
		if strings.Contains(a.What, "kept") {
			kept = append(kept, a.Path)
		}
	}
	if len(kept) != 4 {
		t.Errorf("report names %d kept entries, want 4: %+v", len(kept), rep.Actions)
	}
}

// A file install cannot merge into is refused before anything is written: the
// whole project is byte for byte as it was (no tools, no manifest either).
func TestSetupRefusesWithoutChanging(t *testing.T) {
	tests := []struct {
		name  string
		agent string
		files map[string]string
		force bool // still refused with --force
	}{
		{"invalid .mcp.json", "claude", map[string]string{".mcp.json": `{"mcpServers": {`}, true},
		{".mcp.json with a comment", "claude", map[string]string{".mcp.json": "{\n  // servers\n  \"mcpServers\": {}\n}"}, true},
		{".mcp.json is an array", "claude", map[string]string{".mcp.json": `[]`}, true},
		{"empty .mcp.json", "claude", map[string]string{".mcp.json": ``}, true},
		{"mcpServers is a string", "claude", map[string]string{".mcp.json": `{"mcpServers": "none"}`}, true},
		{"invalid settings.json", "claude", map[string]string{".claude/settings.json": `{"hooks": {,}}`}, true},
		{"PreToolUse is an object", "claude", map[string]string{".claude/settings.json": `{"hooks": {"PreToolUse": {"matcher": "Bash"}}}`}, true},
		{"hooks is an array", "claude", map[string]string{".claude/settings.json": `{"hooks": []}`}, true},
		{"another contextd server", "claude", map[string]string{".mcp.json": `{"mcpServers": {"contextd": {"command": "/opt/contextd/bin/proxy", "args": ["mcp"]}}}`}, false},
		{"settings.json is a directory", "claude", map[string]string{".claude/settings.json/x": ``}, true},
		{"invalid opencode.json", "opencode", map[string]string{"opencode.json": `{"mcp": {"a": }}`}, true},
		{"another contextd in opencode.json", "opencode", map[string]string{"opencode.json": `{"mcp": {"contextd": {"type": "remote", "url": "https://x"}}}`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, bin := project(t, tt.files)
			before := snapshot(t, root)
			o := opts(root, bin)
			o.Agent = tt.agent
			_, err := install.Setup(context.Background(), o)
			if !errors.Is(err, catalog.ErrConflict) {
				t.Fatalf("install: %v, want ErrConflict", err)
			}
			sameTree(t, "after a refused install", snapshot(t, root), before)
			if tt.force {
				o.Force = true
				if _, err := install.Setup(context.Background(), o); !errors.Is(err, catalog.ErrConflict) {
					t.Fatalf("install --force: %v, want ErrConflict", err)
				}
				sameTree(t, "after a refused install --force", snapshot(t, root), before)
			}
		})
	}
}

// --force replaces the user's own contextd entries; uninstall puts them back.
func TestSetupForceAndUninstallRestores(t *testing.T) {
	files := map[string]string{
		".mcp.json": "{\n  \"mcpServers\": {\n    \"contextd\": {\n      \"command\": \"/opt/old/contextd-proxy\",\n      \"args\": [\"mcp\", \"--verbose\"]\n    }\n  }\n}\n",
		"CLAUDE.md": "# Notes\n\n" + install.SectionBegin + "\nuse contextd, my way\n" + install.SectionEnd + "\n",
	}
	root, bin := project(t, files)
	before := snapshot(t, root)
	o := opts(root, bin)
	rep, err := install.Setup(context.Background(), o)
	if !errors.Is(err, catalog.ErrConflict) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("install without --force: %v, want a conflict that names --force (%+v)", err, rep)
	}
	o.Force = true
	if _, err := install.Setup(context.Background(), o); err != nil {
		t.Fatalf("install --force: %v", err)
	}
	got := decode(t, ".mcp.json", readFile(t, filepath.Join(root, ".mcp.json")))
	if !reflect.DeepEqual(got["mcpServers"].(map[string]any)["contextd"], mcpValue(bin)) {
		t.Errorf("--force did not write our entry: %v", got)
	}
	if md := readFile(t, filepath.Join(root, "CLAUDE.md")); strings.Contains(md, "my way") || !strings.HasPrefix(md, "# Notes\n\n") {
		t.Errorf("--force CLAUDE.md:\n%s", md)
	}
	// Again with --force: nothing changes.
	first := snapshot(t, root)
	if _, err := install.Setup(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "second install --force", snapshot(t, root), first)
	if _, err := install.Uninstall(context.Background(), install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatalf("uninstall: %v", err)
	}
	sameTree(t, "after uninstall", snapshot(t, root), before)
}

// A proxy installed at a new path takes its entries along (no duplicates); the
// entries are still ours for uninstall.
func TestSetupProxyMoved(t *testing.T) {
	root, bin := project(t, map[string]string{".claude/settings.json": `{"hooks": {"PreToolUse": []}}`})
	before := snapshot(t, root)
	ctx := context.Background()
	if _, err := install.Setup(ctx, opts(root, bin)); err != nil {
		t.Fatal(err)
	}
	bin2 := filepath.Join(filepath.Dir(bin), "v2", "contextd-proxy")
	writeFile(t, bin2, "#!/bin/sh\n")
	if _, err := install.Setup(ctx, opts(root, bin2)); err != nil {
		t.Fatalf("install from the new path: %v", err)
	}
	mcp := decode(t, ".mcp.json", readFile(t, filepath.Join(root, ".mcp.json")))
	if !reflect.DeepEqual(mcp["mcpServers"].(map[string]any)["contextd"], mcpValue(bin2)) {
		t.Errorf(".mcp.json: %v", mcp)
	}
	settings := decode(t, "settings.json", readFile(t, filepath.Join(root, ".claude/settings.json")))
	pre := settings["hooks"].(map[string]any)["PreToolUse"].([]any)
	if len(pre) != 1 || !reflect.DeepEqual(pre[0], hookValue(bin2)) {
		t.Errorf("PreToolUse after the move: %v", pre)
	}
	checkInstalled(t, filepath.Join(root, ".claude/tools"), bin2)
	if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after uninstall", snapshot(t, root), before)
}

// OpenCode: the entry goes in the shape the file uses (OpenCode 1's mcp.NAME
// with "enabled", OpenCode 2's mcp.servers.NAME), JSONC comments and trailing
// commas survive, a new file gets the 1.x shape with $schema; no tools and no
// .claude are written.
func TestSetupOpenCode(t *testing.T) {
	v1 := func(bin string) map[string]any {
		return map[string]any{"type": "local", "command": []any{bin, "mcp"}, "enabled": true}
	}
	v2 := func(bin string) map[string]any { return map[string]any{"type": "local", "command": []any{bin, "mcp"}} }
	tests := []struct {
		name string
		file string // the file install must edit
		orig string // "" = no file
		path []string
		want func(string) map[string]any
	}{
		{"new file", "opencode.json", "", []string{"mcp", "contextd"}, v1},
		{"1.x shape", "opencode.json", "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"mcp\": {\n    \"fs\": {\"type\": \"local\", \"command\": [\"fs-mcp\"], \"enabled\": true}\n  }\n}\n",
			[]string{"mcp", "contextd"}, v1},
		{"2.x shape", "opencode.json", "{\n  \"mcp\": {\n    \"servers\": {\n      \"fs\": {\"type\": \"local\", \"command\": [\"fs-mcp\"]}\n    }\n  }\n}\n",
			[]string{"mcp", "servers", "contextd"}, v2},
		{"a 1.x server named servers", "opencode.json", `{"mcp": {"servers": {"type": "local", "command": ["x"], "enabled": true}}}`,
			[]string{"mcp", "contextd"}, v1},
		{"JSONC with comments and trailing commas", "opencode.jsonc", "{\n  // my servers\n  \"mcp\": {\n    \"fs\": {\"type\": \"local\", \"command\": [\"fs-mcp\"],}, /* keep */\n  },\n  \"theme\": \"dark\",\n}\n",
			[]string{"mcp", "contextd"}, v1},
		{"no mcp yet", "opencode.json", "{\n  \"theme\": \"dark\"\n}\n", []string{"mcp", "contextd"}, v1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			if tt.orig != "" {
				files[tt.file] = tt.orig
			}
			root, bin := project(t, files)
			before := snapshot(t, root)
			o := opts(root, bin)
			o.Agent = install.AgentOpenCode
			if _, err := install.Setup(context.Background(), o); err != nil {
				t.Fatalf("install: %v", err)
			}
			got := readFile(t, filepath.Join(root, tt.file))
			node := decodeJSONC(t, got)
			for _, k := range tt.path {
				m, ok := node.(map[string]any)
				if !ok {
					t.Fatalf("%s: no %v in\n%s", tt.file, tt.path, got)
				}
				node = m[k]
			}
			if !reflect.DeepEqual(node, tt.want(bin)) {
				t.Errorf("%s at %v = %v, want %v\n%s", tt.file, tt.path, node, tt.want(bin), got)
			}
			if tt.orig == "" && !strings.Contains(got, `"$schema": "https://opencode.ai/config.json"`) {
				t.Errorf("new file without $schema:\n%s", got)
			}
			if strings.Contains(tt.orig, "// my servers") && (!strings.Contains(got, "// my servers") || !strings.Contains(got, "/* keep */")) {
				t.Errorf("comments lost:\n%s", got)
			}
			if _, err := os.Lstat(filepath.Join(root, ".claude")); err == nil {
				t.Error("--agent opencode created .claude")
			}
			first := snapshot(t, root)
			if _, err := install.Setup(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			sameTree(t, "second install", snapshot(t, root), first)
			if _, err := install.Uninstall(context.Background(), install.Options{Project: root, NoClaudeCLI: true}); err != nil {
				t.Fatalf("uninstall: %v", err)
			}
			sameTree(t, "after uninstall", snapshot(t, root), before)
		})
	}
}

// decodeJSONC decodes a JSONC document with a plain scanner of this test's
// own (not install's parser): comments out first, then trailing commas.
func decodeJSONC(t *testing.T, s string) any {
	t.Helper()
	// scan copies s, calling drop at each byte outside strings to ask how many
	// bytes to leave out there.
	scan := func(s string, drop func(rest string) int) string {
		var b strings.Builder
		inStr := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if inStr {
				b.WriteByte(c)
				if c == '\\' && i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				} else if c == '"' {
					inStr = false
				}
				continue
			}
			if n := drop(s[i:]); n > 0 {
				i += n - 1
				continue
			}
			inStr = c == '"'
			b.WriteByte(c)
		}
		return b.String()
	}
	noComments := scan(s, func(rest string) int {
		switch {
		case strings.HasPrefix(rest, "//"):
			if n := strings.IndexByte(rest, '\n'); n >= 0 {
				return n
			}
			return len(rest)
		case strings.HasPrefix(rest, "/*"):
			return strings.Index(rest, "*/") + 2
		}
		return 0
	})
	strict := scan(noComments, func(rest string) int {
		if after := strings.TrimLeft(rest[1:], " \t\r\n"); rest[0] == ',' && (strings.HasPrefix(after, "}") || strings.HasPrefix(after, "]")) {
			return 1
		}
		return 0
	})
	var v any
	if err := json.Unmarshal([]byte(strict), &v); err != nil {
		t.Fatalf("not JSONC (%v):\n%s", err, s)
	}
	return v
}

// Several agents in one project: each run adds to the record, uninstall takes
// everything back.
func TestSetupSeveralAgents(t *testing.T) {
	root, bin := project(t, map[string]string{"CLAUDE.md": "# x\n"})
	before := snapshot(t, root)
	ctx := context.Background()
	for _, a := range []string{install.AgentNone, install.AgentOpenCode, install.AgentClaude} {
		o := opts(root, bin)
		o.Agent = a
		if _, err := install.Setup(ctx, o); err != nil {
			t.Fatalf("install --agent %s: %v", a, err)
		}
	}
	for _, p := range []string{".mcp.json", "opencode.json", ".claude/settings.json", ".claude/tools/safe_bash/safe_bash"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if !agentfiles.MCPRegistered(root) {
		t.Error("the record does not say the MCP server is registered")
	}
	if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after uninstall", snapshot(t, root), before)
}

// --agent none writes only the tools; a tools directory given as before
// --agent existed (relative to the working directory) still works.
func TestSetupToolsOnly(t *testing.T) {
	root, bin := project(t, nil)
	sub := filepath.Join(root, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, root)
	t.Chdir(sub)
	o := install.Options{Agent: install.AgentNone, ToolsDir: "agent-tools", Proxy: bin, NoClaudeCLI: true}
	rep, err := install.Setup(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Root != root {
		t.Errorf("root %s, want %s (found from the working directory)", rep.Root, root)
	}
	checkInstalled(t, filepath.Join(sub, "agent-tools"), bin)
	for _, p := range []string{".mcp.json", ".claude", "CLAUDE.md", "sub/.claude"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("--agent none wrote %s", p)
		}
	}
	if agentfiles.MCPRegistered(root) {
		t.Error("--agent none recorded an MCP server")
	}
	if _, err := install.Uninstall(context.Background(), install.Options{NoClaudeCLI: true}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after uninstall", snapshot(t, root), before)
}

// A project installed before the project record existed: uninstall still
// removes the tools it finds in the default directory.
func TestUninstallOldInstall(t *testing.T) {
	root, bin := project(t, map[string]string{"README": "hi\n"})
	before := snapshot(t, root)
	if _, err := install.Install(filepath.Join(root, ".claude/tools"), bin); err != nil {
		t.Fatal(err)
	}
	if _, err := install.Uninstall(context.Background(), install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, root)
	delete(after, ".claude") // the old install did not record that it made .claude
	sameTree(t, "after uninstall", after, before)

	// Nothing installed: a note, no error, no change.
	rep, err := install.Uninstall(context.Background(), install.Options{Project: root, NoClaudeCLI: true})
	if err != nil || len(rep.Actions) != 1 || rep.Actions[0].What != "nothing installed here" {
		t.Errorf("uninstall of nothing: %v %+v", err, rep)
	}
}

// A file that stopped being JSON after install: uninstall undoes the rest,
// keeps the record of what it could not undo and says so; once the file is
// fixed, a second uninstall finishes.
func TestUninstallAfterFileBroke(t *testing.T) {
	orig := "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\"}\n  }\n}\n"
	root, bin := project(t, map[string]string{".mcp.json": orig})
	before := snapshot(t, root)
	ctx := context.Background()
	if _, err := install.Setup(ctx, opts(root, bin)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, ".mcp.json")
	good := readFile(t, p)
	writeFile(t, p, good+"oops")
	rep, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true})
	if !errors.Is(err, catalog.ErrConflict) || len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], ".mcp.json") {
		t.Fatalf("uninstall with a broken .mcp.json: %v %+v", err, rep)
	}
	if _, err := os.Lstat(filepath.Join(root, ".claude/tools")); err == nil {
		t.Error("the tools were not removed")
	}
	writeFile(t, p, good)
	if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	sameTree(t, "after the second uninstall", snapshot(t, root), before)
}

// The same with a file inside a directory install created: the directory
// stays recorded while the file keeps it, and the second uninstall removes it.
func TestUninstallAfterSettingsBroke(t *testing.T) {
	root, bin := project(t, nil)
	before := snapshot(t, root)
	ctx := context.Background()
	if _, err := install.Setup(ctx, opts(root, bin)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, ".claude", "settings.json")
	good := readFile(t, p)
	writeFile(t, p, good+"oops")
	if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("uninstall with a broken settings.json: %v", err)
	}
	writeFile(t, p, good)
	if _, err := install.Uninstall(ctx, install.Options{Project: root, NoClaudeCLI: true}); err != nil {
		t.Fatalf("second uninstall: %v", err)
	}
	sameTree(t, "after the second uninstall", snapshot(t, root), before)
}

func TestFindRoot(t *testing.T) {
	root, _ := project(t, nil)
	deep := filepath.Join(root, "a", "b")
	plain := filepath.Join(filepath.Dir(root), "plain", "x")
	for _, d := range []string{deep, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ cwd, want string }{{deep, root}, {root, root}, {plain, plain}} {
		got, err := install.FindRoot(tc.cwd)
		if err != nil || got != tc.want {
			t.Errorf("FindRoot(%s) = %s, %v; want %s", tc.cwd, got, err, tc.want)
		}
	}
	if _, err := install.FindRoot("/"); !errors.Is(err, catalog.ErrPolicy) {
		t.Errorf("FindRoot(/): %v, want ErrPolicy", err)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args      []string
		uninstall bool
		want      install.Options
		help      bool
		err       error
	}{
		{args: nil, want: install.Options{Agent: "auto"}},
		{args: []string{"tools"}, want: install.Options{Agent: "claude", ToolsDir: "tools"}},
		{args: []string{"--agent", "opencode"}, want: install.Options{Agent: "opencode"}},
		{args: []string{"--agent", "codex", "--no-trust"}, want: install.Options{Agent: "codex", NoTrust: true}},
		{args: []string{"--agent=gemini"}, want: install.Options{Agent: "gemini"}},
		{args: []string{"--agent=none", "--project=/p", "x"}, want: install.Options{Agent: "none", Project: "/p", ToolsDir: "x"}},
		{args: []string{"--force", "--project", "/p"}, want: install.Options{Agent: "auto", Force: true, Project: "/p"}},
		{args: []string{"--", "--odd-dir"}, want: install.Options{Agent: "claude", ToolsDir: "--odd-dir"}},
		{args: []string{"-h"}, want: install.Options{Agent: "auto"}, help: true},
		{args: []string{"--agent"}, err: catalog.ErrUsage},
		{args: []string{"--agent", "vim"}, err: catalog.ErrUsage},
		{args: []string{"--project"}, err: catalog.ErrUsage},
		{args: []string{"--force=yes"}, err: catalog.ErrUsage},
		{args: []string{"a", "b"}, err: catalog.ErrUsage},
		{args: []string{"--agent", "opencode", "dir"}, err: catalog.ErrUsage},
		{args: []string{"--agent", "codex", "dir"}, err: catalog.ErrUsage},
		{args: []string{"--no-trust=1"}, err: catalog.ErrUsage},
		{args: []string{"--agent", "codex", "--yes"}, want: install.Options{Agent: "codex", Yes: true}},
		{args: []string{"--yes=1"}, err: catalog.ErrUsage},
		{args: []string{"--yes"}, uninstall: true, err: catalog.ErrUsage},
		{args: []string{"--no-trust"}, uninstall: true, err: catalog.ErrUsage},
		{args: []string{"--bogus"}, err: catalog.ErrUsage},
		{args: []string{"--project", "/p"}, uninstall: true, want: install.Options{Project: "/p"}},
		{args: []string{"dir"}, uninstall: true, err: catalog.ErrUsage},
		{args: []string{"--agent", "claude"}, uninstall: true, err: catalog.ErrUsage},
		{args: []string{"--force"}, uninstall: true, err: catalog.ErrUsage},
	}
	for _, tt := range tests {
		parse := install.ParseInstallArgs
		if tt.uninstall {
			parse = install.ParseUninstallArgs
		}
		got, help, err := parse(tt.args)
		if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("%q: error %v, want %v", tt.args, err, tt.err)
			continue
		}
		if err == nil && (!reflect.DeepEqual(got, tt.want) || help != tt.help) {
			t.Errorf("%q: %+v help=%v, want %+v help=%v", tt.args, got, help, tt.want, tt.help)
		}
	}
}

func TestHookCommandQuotesOddPaths(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/contextd-proxy":           "/usr/bin/contextd-proxy hook",
		"/home/a b/bin/contextd-proxy":      "'/home/a b/bin/contextd-proxy' hook",
		"/home/it's/contextd-proxy":         `'/home/it'\''s/contextd-proxy' hook`,
		"/opt/$HOME/contextd-proxy":         "'/opt/$HOME/contextd-proxy' hook",
		"/home/x/.local/bin/contextd-proxy": "/home/x/.local/bin/contextd-proxy hook",
	} {
		if got := install.HookCommand(in); got != want {
			t.Errorf("HookCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every tool is installed for the Claude agent by default: the symlink faces
// are what a human or another agent calls.
func TestSetupInstallsEveryTool(t *testing.T) {
	root, bin := project(t, nil)
	if _, err := install.Setup(context.Background(), opts(root, bin)); err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, err := os.ReadDir(filepath.Join(root, ".claude/tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	want := toolspec.Names()
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	m := map[string]any{}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, install.AgentManifestName))), &m); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(m)); !slices.Contains(keys, "json") || !slices.Contains(keys, "markdown") {
		t.Errorf("manifest keys %v", keys)
	}
}
