package toolmanifest_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolmanifest"
)

// full is a manifest using every key.
const full = `
name = "log-query"
version = "1.2.0"
description = "Query the staging stack's logs by service and time range"
schema = "schema.json"
doc = "docs/TOOL.md"

[build]
command = ["go", "build", "-o", "bin/log-query", "."]
toolchains = ["go"]

[run]
command = ["./bin/../bin/log-query", "--serve"]

[permissions]
workspace = "read-only"
read_only = ["/usr/share/zoneinfo/", "/opt/logs//index"]
egress = ["logs.staging.example.com:443   GET,HEAD", "*.example.org"]
credentials = ["STAGING_TOKEN"]
memory = "512MiB"
tasks = 32
timeout = "45s"
`

// minimal holds only the required keys.
const minimal = `
name = "hello"
description = "Say hello"
schema = "schema.json"
[run]
command = ["hello"]
`

func TestParseFull(t *testing.T) {
	m, err := toolmanifest.Parse([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want := &toolmanifest.Manifest{
		Name:        "log-query",
		Version:     "1.2.0",
		Description: "Query the staging stack's logs by service and time range",
		Schema:      toolmanifest.Schema{Path: "schema.json"},
		Doc:         "docs/TOOL.md",
		Build:       &toolmanifest.Build{Command: []string{"go", "build", "-o", "bin/log-query", "."}, Toolchains: []string{"go"}},
		Run:         toolmanifest.Run{Command: []string{"bin/log-query", "--serve"}},
		Permissions: toolmanifest.Perms{
			Workspace:   toolmanifest.AccessReadOnly,
			ReadOnly:    []string{"/usr/share/zoneinfo", "/opt/logs/index"},
			Egress:      []string{"logs.staging.example.com:443 GET,HEAD", "*.example.org"},
			Credentials: []string{"STAGING_TOKEN"},
			Memory:      512 << 20,
			Tasks:       32,
			Timeout:     45 * time.Second,
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got  %+v\nwant %+v", m, want)
	}
}

func TestParseDefaults(t *testing.T) {
	m, err := toolmanifest.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Permissions
	if m.Doc != "TOOL.md" || m.Build != nil || p.Workspace != toolmanifest.AccessNone ||
		p.Memory != toolmanifest.DefaultMemory || p.Tasks != toolmanifest.DefaultTasks || p.Timeout != toolmanifest.DefaultTimeout {
		t.Errorf("defaults not applied: %+v", m)
	}
}

func TestInlineSchema(t *testing.T) {
	for name, schema := range map[string]string{
		"string": `schema = '''{ "type": "object", "properties": { "q": { "type": "string" } } }'''`,
		"table":  "[schema]\ntype = \"object\"\n[schema.properties.q]\ntype = \"string\"",
	} {
		t.Run(name, func(t *testing.T) {
			doc := "name = \"x\"\ndescription = \"d\"\n[run]\ncommand = [\"x\"]\n" + schema
			if name == "string" {
				doc = schema + "\nname = \"x\"\ndescription = \"d\"\n[run]\ncommand = [\"x\"]\n"
			}
			m, err := toolmanifest.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.InputSchema(nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"properties":{"q":{"type":"string"}},"type":"object"}`; name == "table" && string(got) != want {
				t.Errorf("got %s, want %s", got, want)
			}
			if want := `{"type":"object","properties":{"q":{"type":"string"}}}`; name == "string" && string(got) != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// Each bad manifest is refused with catalog.ErrBadInput, and the message
// names the key at fault.
func TestParseErrors(t *testing.T) {
	base := map[string]string{
		"name":        `name = "hello"`,
		"description": `description = "Say hello"`,
		"schema":      `schema = "schema.json"`,
		"run":         "[run]\ncommand = [\"bin/hello\"]",
	}
	cases := []struct {
		name    string
		replace string // which base line to replace ("" adds)
		with    string
		key     string // must appear in the message
	}{
		{"unknown top key", "", `colour = "red"`, "colour"},
		{"unknown nested key", "run", "[run]\ncommand = [\"x\"]\ncwd = \"/\"", "run.cwd"},
		{"unknown permission", "", "[permissions]\nnetwork = true", "permissions.network"},
		{"no name", "name", "", "name"},
		{"upper-case name", "name", `name = "Hello"`, "name"},
		{"name with slash", "name", `name = "a/b"`, "name"},
		{"name too long", "name", `name = "` + strings.Repeat("a", 33) + `"`, "name"},
		{"name starts with digit", "name", `name = "1x"`, "name"},
		{"no description", "description", "", "description"},
		{"two-line description", "description", `description = "a\nb"`, "description"},
		{"long description", "description", `description = "` + strings.Repeat("a", 201) + `"`, "description"},
		{"no schema", "schema", "", "schema"},
		{"schema leaves root", "schema", `schema = "../schema.json"`, "schema"},
		{"absolute schema", "schema", `schema = "/etc/passwd"`, "schema"},
		{"inline schema not object type", "schema", `schema = '{"type":"string"}'`, "schema"},
		{"inline schema not JSON", "schema", `schema = '{"type":'`, "schema"},
		{"inline schema trailing", "schema", `schema = '{"type":"object"} {}'`, "schema"},
		{"schema number", "schema", `schema = 3`, "schema"},
		{"doc leaves root", "", `doc = "a/../../TOOL.md"`, "doc"},
		{"doc is root", "", `doc = "./"`, "doc"},
		{"no run", "run", "", "run.command"},
		{"run absolute", "run", "[run]\ncommand = [\"/usr/bin/python3\"]", "run.command"},
		{"run leaves root", "run", "[run]\ncommand = [\"../x\"]", "run.command"},
		{"run NUL arg", "run", "[run]\ncommand = [\"x\", \"a\\u0000b\"]", "run.command"},
		{"build no command", "", "[build]\ntoolchains = [\"go\"]", "build.command"},
		{"build bad toolchain", "", "[build]\ncommand = [\"make\"]\ntoolchains = [\"Go!\"]", "build.toolchains"},
		{"workspace unknown", "", "[permissions]\nworkspace = \"rw\"", "permissions.workspace"},
		{"read_only relative", "", "[permissions]\nread_only = [\"etc\"]", "permissions.read_only"},
		{"read_only root", "", "[permissions]\nread_only = [\"/./\"]", "permissions.read_only"},
		{"read_only twice", "", "[permissions]\nread_only = [\"/a\", \"/a/\"]", "permissions.read_only"},
		{"egress empty", "", "[permissions]\negress = [\" \"]", "permissions.egress"},
		{"egress three fields", "", "[permissions]\negress = [\"a b c\"]", "permissions.egress"},
		{"egress no host", "", "[permissions]\negress = [\":443\"]", "permissions.egress"},
		{"credential bad", "", "[permissions]\ncredentials = [\"GH-TOKEN\"]", "permissions.credentials"},
		{"too many credentials", "", "[permissions]\ncredentials = [" + manyNames(33) + "]", "33 entries"},
		{"credential twice", "", "[permissions]\ncredentials = [\"A\", \"A\"]", "permissions.credentials"},
		{"memory small", "", "[permissions]\nmemory = \"1MiB\"", "permissions.memory"},
		{"memory huge", "", "[permissions]\nmemory = \"65GiB\"", "permissions.memory"},
		{"memory overflow", "", "[permissions]\nmemory = \"99999999999999999999G\"", "permissions.memory"},
		{"memory unit", "", "[permissions]\nmemory = \"5 parsecs\"", "permissions.memory"},
		{"memory negative", "", "[permissions]\nmemory = -1", "permissions.memory"},
		{"memory float", "", "[permissions]\nmemory = 1.5", "permissions.memory"},
		{"tasks low", "", "[permissions]\ntasks = 2", "permissions.tasks"},
		{"tasks high", "", "[permissions]\ntasks = 5000", "permissions.tasks"},
		{"timeout bad", "", "[permissions]\ntimeout = \"soon\"", "permissions.timeout"},
		{"timeout long", "", "[permissions]\ntimeout = \"2h\"", "permissions.timeout"},
		{"timeout short", "", "[permissions]\ntimeout = \"10ms\"", "permissions.timeout"},
		{"type mismatch", "name", `name = 3`, "name"},
		{"syntax", "", `name = `, "line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var top, tables []string
			for _, k := range []string{"name", "description", "schema", "run"} {
				line := base[k]
				if k == c.replace {
					line = c.with
				}
				if strings.HasPrefix(line, "[") {
					tables = append(tables, line)
				} else {
					top = append(top, line)
				}
			}
			if c.replace == "" {
				if strings.HasPrefix(c.with, "[") {
					tables = append(tables, c.with)
				} else {
					top = append(top, c.with)
				}
			}
			doc := strings.Join(append(top, tables...), "\n")
			_, err := toolmanifest.Parse([]byte(doc))
			if !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("Parse(%q) = %v, want ErrBadInput", doc, err)
			}
			if !strings.Contains(err.Error(), c.key) {
				t.Errorf("error %q does not name %q", err, c.key)
			}
		})
	}
}

// manyNames is a TOML list of n distinct variable names.
func manyNames(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "\"V%d\",", i)
	}
	return b.String()
}

func TestParseTooLarge(t *testing.T) {
	data := []byte(minimal + "#" + strings.Repeat("x", toolmanifest.MaxSize))
	if _, err := toolmanifest.Parse(data); !errors.Is(err, catalog.ErrBadInput) {
		t.Fatalf("got %v, want ErrBadInput", err)
	}
}

func TestInputSchemaFile(t *testing.T) {
	m, err := toolmanifest.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		fsys fstest.MapFS
		ok   bool
	}{
		{"good", fstest.MapFS{"schema.json": {Data: []byte(`{"type":"object"}`)}}, true},
		{"missing", fstest.MapFS{}, false},
		{"array", fstest.MapFS{"schema.json": {Data: []byte(`[]`)}}, false},
		{"null", fstest.MapFS{"schema.json": {Data: []byte(`null`)}}, false},
		{"no type", fstest.MapFS{"schema.json": {Data: []byte(`{"properties":{}}`)}}, false},
		{"too large", fstest.MapFS{"schema.json": {Data: []byte(`{"type":"object","x":"` + strings.Repeat("a", 300<<10) + `"}`)}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.InputSchema(c.fsys)
			if c.ok && err != nil {
				t.Fatal(err)
			}
			if !c.ok && !errors.Is(err, catalog.ErrBadInput) {
				t.Fatalf("got %v, want ErrBadInput", err)
			}
		})
	}
}

// An os.Root's FS does not follow a symlink out of the tool's tree.
func TestInputSchemaSymlinkOut(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir() + "/secret.json"
	if err := os.WriteFile(outside, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir+"/schema.json"); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	m, err := toolmanifest.Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.InputSchema(root.FS()); !errors.Is(err, catalog.ErrBadInput) {
		t.Fatalf("got %v, want the symlink out refused", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, doc := range []string{full, minimal, "schema = '{\"type\":\"object\"}'\n" + minimal[:strings.Index(minimal, "schema")] + "[run]\ncommand = [\"x\"]"} {
		m, err := toolmanifest.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		enc, err := toolmanifest.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := toolmanifest.Parse(enc)
		if err != nil {
			t.Fatalf("Parse(Encode) = %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(m, again) {
			t.Errorf("round trip changed the manifest:\n%+v\n%+v", m, again)
		}
	}
}
