package hook

import (
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// reference reads hook.blocked with the TOML parser the daemon uses.
func reference(src string) (list []string, found bool, err error) {
	var cfg struct {
		Hook struct {
			Blocked *[]string `toml:"blocked"`
		} `toml:"hook"`
	}
	if _, err := toml.Decode(src, &cfg); err != nil {
		return nil, false, err
	}
	if cfg.Hook.Blocked == nil {
		return nil, false, nil
	}
	return *cfg.Hook.Blocked, true, nil
}

var tomlCases = []struct {
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
	{"spaces in the header", "[ hook ]\nblocked=[\"A\"]\n", []string{"A"}, true, false},
	{"inline table", "hook = { blocked = [\"A\", \"B\"] }\n", []string{"A", "B"}, true, false},
	{"escapes", "[hook]\nblocked = [\"B\\u0061sh\", \"R\\tx\"]\n", []string{"Bash", "R\tx"}, true, false},
	{"after other tables", "idle_timeout = \"4s\"\n[tools.safe_bash]\nenv = [\"A\", \"B\"]\nshell = \"/bin/bash\"\n[hook]\nblocked = [\"Bash\"]\n[store]\nbackend = \"sqlite\"\n", []string{"Bash"}, true, false},
	{"hook in a string is not a table", "note = \"\"\"\n[hook]\nblocked = [\"X\"]\n\"\"\"\n", nil, false, false},
	{"hook in a literal string", "note = '''\n[hook]\nblocked = [\"X\"]'''\n", nil, false, false},
	{"blocked elsewhere", "[tools]\nblocked = [\"X\"]\n[hook.sub]\nblocked = [\"Y\"]\n", nil, false, false},
	{"array of tables is not the table", "[[hook]]\nblocked = [\"X\"]\n", nil, false, false},
	{"dates and numbers skipped", "[a]\nd = 1979-05-27 07:32:00Z\nn = -1_000.5e3\nb = true\n[hook]\nblocked = [\"Bash\"]\n", []string{"Bash"}, true, false},
	{"not a list", "[hook]\nblocked = \"Bash\"\n", nil, false, true},
	{"numbers in the list", "[hook]\nblocked = [1, 2]\n", nil, false, true},
	{"unterminated array", "[hook]\nblocked = [\"Bash\"\n", nil, false, true},
	{"broken header", "[hook\nblocked = [\"Task\"]\n", nil, false, true},
	{"twice", "[hook]\nblocked = [\"A\"]\nblocked = [\"B\"]\n", nil, false, true},
	{"line break in a string", "[hook]\nblocked = [\"Ba\nsh\"]\n", nil, false, true},
	{"value missing", "[hook]\nblocked =\n", nil, false, true},
}

func TestScanBlocked(t *testing.T) {
	for _, tt := range tomlCases {
		got, found, err := scanBlocked(tt.src)
		if (err != nil) != tt.bad {
			t.Errorf("%s: error %v, want bad=%v", tt.name, err, tt.bad)
			continue
		}
		if err == nil && (found != tt.found || !slices.Equal(got, tt.want)) {
			t.Errorf("%s: %q %v, want %q %v", tt.name, got, found, tt.want, tt.found)
		}
		// The daemon's parser agrees wherever it accepts the document.
		if ref, rfound, rerr := reference(tt.src); rerr == nil && (err != nil || rfound != found || !slices.Equal(ref, got)) {
			t.Errorf("%s: scanner %q %v %v, daemon's parser %q %v", tt.name, got, found, err, ref, rfound)
		}
	}
}

// FuzzScanBlocked: never a crash or a hang; wherever the daemon's TOML parser
// reads the document, the scanner finds the same hook.blocked or reports an
// error (then the hook keeps its default list and says so).
func FuzzScanBlocked(f *testing.F) {
	for _, tt := range tomlCases {
		f.Add(tt.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		got, found, err := scanBlocked(src)
		ref, rfound, rerr := reference(src)
		if rerr != nil || err != nil {
			return
		}
		if found != rfound || !slices.Equal(got, ref) {
			// The one known difference: a name holding a NUL or other control
			// character never names a tool either way.
			if strings.ContainsFunc(strings.Join(ref, ""), func(r rune) bool { return r < 0x20 }) {
				return
			}
			t.Fatalf("%q: scanner %q %v, daemon's parser %q %v", src, got, found, ref, rfound)
		}
	})
}
