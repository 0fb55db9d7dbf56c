package toolmanifest_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/toolmanifest"
)

// withPerms parses a manifest whose [permissions] table is perms.
func withPerms(t *testing.T, perms string) *toolmanifest.Manifest {
	t.Helper()
	m, err := toolmanifest.Parse([]byte(minimal + "[permissions]\n" + perms))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPermissions(t *testing.T) {
	m, err := toolmanifest.Parse([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"read the workspace",
		"read /usr/share/zoneinfo",
		"read /opt/logs/index",
		"connect to logs.staging.example.com:443 GET,HEAD",
		"connect to *.example.org",
		"use the credential STAGING_TOKEN (it sees a placeholder; the egress proxy sends the value)",
		"use up to 512 MiB of memory",
		"run up to 32 processes and threads",
		"run up to 45s per call",
		"build once at install with the go toolchains' caches and registries: go build -o bin/log-query .",
	}
	if got := toolmanifest.Permissions(m); !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got := toolmanifest.Permissions(withPerms(t, "")); !slices.Contains(got, "no network beyond its own loopback") ||
		!slices.Contains(got, "no access to the workspace") {
		t.Errorf("a tool asking nothing is not shown so: %q", got)
	}
}

func TestWidens(t *testing.T) {
	old := `workspace = "read-only"
read_only = ["/opt/data"]
egress = ["api.example.com:443"]
credentials = ["TOKEN"]
memory = "256MiB"
tasks = 32
timeout = "30s"
`
	cases := []struct {
		name string
		next string
		want []string
	}{
		{"same", old, nil},
		{"narrower", "workspace = \"none\"\nread_only = [\"/opt/data/sub\"]\nmemory = \"64MiB\"\ntasks = 16\ntimeout = \"5s\"", nil},
		{"write", strings.Replace(old, `"read-only"`, `"read-write"`, 1), []string{"read and write the workspace"}},
		{"new path", strings.Replace(old, `["/opt/data"]`, `["/opt/data", "/opt/database"]`, 1), []string{"read /opt/database"}},
		{"new rule", strings.Replace(old, `["api.example.com:443"]`, `["api.example.com:443", "api.example.com:80"]`, 1), []string{"connect to api.example.com:80"}},
		{"new credential", strings.Replace(old, `["TOKEN"]`, `["TOKEN", "OTHER"]`, 1),
			[]string{"use the credential OTHER (it sees a placeholder; the egress proxy sends the value)"}},
		{"limits", strings.NewReplacer(`"256MiB"`, `"1GiB"`, "32", "64", `"30s"`, `"1m"`).Replace(old),
			[]string{"use up to 1 GiB of memory", "run up to 64 processes and threads", "run up to 1m0s per call"}},
	}
	o := withPerms(t, old)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := toolmanifest.Widens(o, withPerms(t, c.next)); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestWidensBuild(t *testing.T) {
	noBuild := withPerms(t, "")
	m, err := toolmanifest.Parse([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	got := toolmanifest.Widens(noBuild, m)
	if !slices.Contains(got, "its build may use the go toolchain's caches and reach its registries") {
		t.Errorf("a new toolchain is not named: %q", got)
	}
	if got := toolmanifest.Widens(m, m); got != nil {
		t.Errorf("a manifest widens itself: %q", got)
	}
}

func TestPolicyCheck(t *testing.T) {
	p := toolmanifest.Policy{
		MaxWorkspace:       toolmanifest.AccessReadOnly,
		AllowEgress:        []string{"*.example.com", "api.other.org."},
		AllowedCredentials: []string{"TOKEN"},
		AllowedReadOnly:    []string{"/opt/data/"},
		MaxMemory:          512 << 20,
		MaxTasks:           64,
		MaxTimeout:         time.Minute,
	}
	cases := []struct {
		name   string
		perms  string
		excess []string // each must be named; none means allowed
	}{
		{"nothing asked", "", nil},
		{"all within", `workspace = "read-only"
read_only = ["/opt/data", "/opt/data/x"]
egress = ["a.example.com:443 GET", "*.b.example.com", "API.other.org:443"]
credentials = ["TOKEN"]
memory = "512MiB"
tasks = 64
timeout = "1m"`, nil},
		{"workspace", `workspace = "read-write"`, []string{"permissions.workspace"}},
		{"path", `read_only = ["/opt/database"]`, []string{`permissions.read_only "/opt/database"`}},
		{"apex under wildcard", `egress = ["example.com"]`, []string{`permissions.egress "example.com"`}},
		{"wildcard over exact", `egress = ["*.other.org"]`, []string{`permissions.egress "*.other.org"`}},
		{"ipv6", `egress = ["[::1]:80"]`, []string{`permissions.egress "[::1]:80"`}},
		{"credential", `credentials = ["AWS_SECRET"]`, []string{`permissions.credentials "AWS_SECRET"`}},
		{"every excess", `memory = "1GiB"
tasks = 65
timeout = "2m"
credentials = ["A", "B"]`, []string{"permissions.memory 1 GiB", "permissions.tasks 65", "permissions.timeout 2m0s",
			`permissions.credentials "A"`, `permissions.credentials "B"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.Check(withPerms(t, c.perms))
			if len(c.excess) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, catalog.ErrPolicy) {
				t.Fatalf("got %v, want ErrPolicy", err)
			}
			for _, e := range c.excess {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("%q does not name %q", err, e)
				}
			}
		})
	}
}

func TestPolicyAnyHost(t *testing.T) {
	p := toolmanifest.DefaultPolicy()
	m := withPerms(t, `egress = ["x.example.com"]`)
	if err := p.Check(m); !errors.Is(err, catalog.ErrPolicy) {
		t.Fatalf("the default policy allows egress: %v", err)
	}
	p.AllowEgress = []string{"*"}
	if err := p.Check(m); err != nil {
		t.Fatal(err)
	}
	if err := toolmanifest.DefaultPolicy().Check(withPerms(t, `workspace = "read-write"`)); err != nil {
		t.Errorf("the default policy refuses a workspace tool: %v", err)
	}
}

// permissions.host names the daemon's services a tool may use; an update
// adding one widens.
func TestHostPermission(t *testing.T) {
	base := "name = \"x\"\ndescription = \"d\"\nschema = '{\"type\":\"object\"}'\n[run]\ncommand = [\"x\"]\n[permissions]\n"
	old, err := toolmanifest.Parse([]byte(base + "host = [\"memory-read\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	next, err := toolmanifest.Parse([]byte(base + "host = [\"memory-read\", \"checkpoints\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := toolmanifest.Widens(old, next); len(w) != 1 || !strings.Contains(w[0], "checkpoints") {
		t.Errorf("adding checkpoints widens by %q", w)
	}
	if w := toolmanifest.Widens(next, old); len(w) != 0 {
		t.Errorf("dropping one widens by %q", w)
	}
	if _, err := toolmanifest.Parse([]byte(base + "host = [\"shell\"]\n")); !errors.Is(err, catalog.ErrBadInput) || !strings.Contains(err.Error(), "permissions.host") {
		t.Errorf("an unknown service: %v", err)
	}
	enc, err := toolmanifest.Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	back, err := toolmanifest.Parse(enc)
	if err != nil || len(back.Permissions.Host) != 2 {
		t.Errorf("encoded and read back: %+v %v", back, err)
	}
}
