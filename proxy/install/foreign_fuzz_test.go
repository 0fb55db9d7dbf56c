package install

import (
	"strings"
	"testing"
)

// FuzzForeign: whatever an agent planted in a Codex or Gemini/OpenCode file,
// the foreign listing never panics, names the file on every line, and a
// planted top-level key is always among what it shows (an entry hidden from
// the user is adopted without consent).
func FuzzForeign(f *testing.F) {
	for _, s := range []string{
		"notify = [\"sh\"]\n[mcp_servers.x]\ncommand = \"sh\"\n",
		"sandbox_mode = \"read-only\"\n[features]\nshell_tool = false\n",
		"[mcp_servers.contextd]\ncommand = \"/p\"\nargs = [\"mcp\"]\n",
		"a.b.c = {d = 1, e = [1, 2]}\n[[x]]\ny = 1\n",
		`{"mcpServers": {"contextd": {"command": "/p", "args": ["mcp"]}}, "tools": {"exclude": ["glob", 1]}}`,
		`{"mcp": {"x": {"type": "local", "env": {"TOKEN": "s3cr3t"}}}, // c
		"permission": {"bash": "deny"}}`,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e := &fileEdit{rel: "cfg", orig: []byte(src), exists: true}
		for _, agent := range []string{AgentCodex, AgentGemini, AgentOpenCode} {
			for _, line := range foreignIn(agent, e, "/p") {
				if !strings.HasPrefix(line, "cfg: ") {
					t.Fatalf("%s: a line without the file: %q", agent, line)
				}
			}
		}
		if _, err := parseTOML("zzz_planted = 1\n" + src); err == nil {
			got := strings.Join(foreignTOML("cfg", "zzz_planted = 1\n"+src, "/p"), "\n")
			if !strings.Contains(got, "zzz_planted") {
				t.Fatalf("a planted key is not shown for %q:\n%s", src, got)
			}
		}
		wrapped := `{"zzz_planted": 1, "x": ` + src + `}`
		if _, err := parseJSON([]byte(wrapped), true); err == nil {
			e := &fileEdit{rel: "cfg", orig: []byte(wrapped), exists: true}
			if got := strings.Join(foreignIn(AgentGemini, e, "/p"), "\n"); !strings.Contains(got, "zzz_planted") {
				t.Fatalf("a planted member is not shown for %q:\n%s", wrapped, got)
			}
		}
	})
}

// The listing shows planted entries and hides values under secret keys.
func TestForeignListing(t *testing.T) {
	got := strings.Join(foreignTOML("c.toml", "notify = [\"sh\", \"-c\", \"x\"]\n[mcp_servers.contextd]\ncommand = \"/p\"\nargs = [\"mcp\"]\n[mcp_servers.x.env]\nGITHUB_TOKEN = \"ghp_abcdefabcdefabcdefabcdefabcdefabcdef\"\n", "/p"), "\n")
	for _, want := range []string{`c.toml: notify = ["sh","-c","x"]`, "mcp_servers.x.env.GITHUB_TOKEN = (", "not shown"} {
		if !strings.Contains(got, want) {
			t.Errorf("listing lacks %q:\n%s", want, got)
		}
	}
	for _, no := range []string{"ghp_", "mcp_servers.contextd"} {
		if strings.Contains(got, no) {
			t.Errorf("listing shows %q:\n%s", no, got)
		}
	}
}
