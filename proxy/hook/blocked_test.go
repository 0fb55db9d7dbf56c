package hook

import (
	"slices"
	"testing"

	"github.com/contextd/contextd/daemon/config"
)

var blockedCases = []struct {
	name  string
	src   string
	want  []string
	found bool
	bad   bool
}{
	{"empty", "", nil, false, false},
	{"no hook", "log_level = \"debug\"\n[tools.safe_bash]\nmax_tokens = 4000\n", nil, false, false},
	{"table", "[hook]\nblocked = [\"Bash\", \"Read\"]\n", []string{"Bash", "Read"}, true, false},
	{"empty list", "[hook]\nblocked = []\n", []string{}, true, false},
	{"multi-line array with comments", "[hook] # the hook\nblocked = [\n  \"Bash\", # shell\n  'Grep',\n  # none\n] # end\n", []string{"Bash", "Grep"}, true, false},
	{"dotted at the top", "hook.blocked = [\"Task\"]\n[tools]\nfile_timeout = \"1m\"\n", []string{"Task"}, true, false},
	{"quoted keys", "[\"hook\"]\n'blocked' = [\"WebFetch\"]\n", []string{"WebFetch"}, true, false},
	{"case of the keys", "[Hook]\nBloCkeD = [\"A\"]\n", []string{"A"}, true, false},
	{"spaces in the header", "[ hook ]\nblocked=[\"A\"]\n", []string{"A"}, true, false},
	{"inline table", "hook = { blocked = [\"A\", \"B\"] }\n", []string{"A", "B"}, true, false},
	{"escapes", "[hook]\nblocked = [\"B\\u0061sh\", \"R\\tx\", \"\\x41\\e\"]\n", []string{"Bash", "R\tx", "A\x1b"}, true, false},
	{"after other tables", "idle_timeout = \"4s\"\n[tools.safe_bash]\nenv = [\"A\", \"B\"]\nshell = \"/bin/bash\"\n[hook]\nblocked = [\"Bash\"]\n[store]\nbackend = \"sqlite\"\n", []string{"Bash"}, true, false},
	{"hook in a string is not a table", "note = \"\"\"\n[hook]\nblocked = [\"X\"]\n\"\"\"\n", nil, false, false},
	{"hook in a literal string", "note = '''\n[hook]\nblocked = [\"X\"]'''\n", nil, false, false},
	{"blocked elsewhere", "[tools]\nblocked = [\"X\"]\n[hook.sub]\nblocked = [\"Y\"]\n", nil, false, false},
	{"dates and numbers elsewhere", "[a]\nd = 1979-05-27 07:32:00Z\nn = -1_000.5e3\nb = true\n[hook]\nblocked = [\"Bash\"]\n", []string{"Bash"}, true, false},
	{"array of tables", "[[hook]]\nblocked = [\"X\"]\n", nil, false, true},
	{"not a list", "[hook]\nblocked = \"Bash\"\n", nil, false, true},
	{"numbers in the list", "[hook]\nblocked = [1, 2]\n", nil, false, true},
	{"unterminated array", "[hook]\nblocked = [\"Bash\"\n", nil, false, true},
	{"broken header", "[hook\nblocked = [\"Task\"]\n", nil, false, true},
	{"twice", "[hook]\nblocked = [\"A\"]\nblocked = [\"B\"]\n", nil, false, true},
	{"line break in a string", "[hook]\nblocked = [\"Ba\nsh\"]\n", nil, false, true},
	{"value missing", "[hook]\nblocked =\n", nil, false, true},
	{"invalid elsewhere in the file", "[tools]\nx = 01\n[hook]\nblocked = [\"A\"]\n", nil, false, true},
}

func TestReadBlocked(t *testing.T) {
	for _, tt := range blockedCases {
		got, found, err := readBlocked([]byte(tt.src))
		if (err != nil) != tt.bad {
			t.Errorf("%s: error %v, want bad=%v", tt.name, err, tt.bad)
			continue
		}
		if err == nil && (found != tt.found || !slices.Equal(got, tt.want)) {
			t.Errorf("%s: %q %v, want %q %v", tt.name, got, found, tt.want, tt.found)
		}
		sameAsDaemon(t, tt.src)
	}
}

// sameAsDaemon: wherever the daemon accepts a configuration, the hook reads
// it and blocks what the daemon holds as [hook] blocked (its default when the
// file does not say).
func sameAsDaemon(t *testing.T, src string) {
	t.Helper()
	c, err := config.Parse([]byte(src))
	if err != nil {
		return
	}
	got, found, err := readBlocked([]byte(src))
	if err != nil {
		t.Fatalf("%q: the daemon reads it, the hook cannot: %v", src, err)
	}
	if !found {
		got = DefaultBlocked
	}
	if !slices.Equal(got, c.Hook.Blocked) {
		t.Fatalf("%q: the hook reads %q, the daemon %q", src, got, c.Hook.Blocked)
	}
}

// FuzzReadBlocked: never a crash or a hang, and wherever the daemon accepts
// the configuration, the hook blocks the same tools.
func FuzzReadBlocked(f *testing.F) {
	for _, tt := range blockedCases {
		f.Add(tt.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sameAsDaemon(t, src)
	})
}
