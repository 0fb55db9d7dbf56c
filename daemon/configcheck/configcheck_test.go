package configcheck_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
	"github.com/contextd/contextd/daemon/configcheck"
)

// A file that any feature refuses stops contextd where it loads: the error
// is a configuration error naming the file and the key, whichever package
// found it.
func TestLoad(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, toml string
		want       []string // substrings of the error; nil when valid
	}{
		{"defaults", "", nil},
		{"egress rules", `[egress]
allow = ["api.github.com:443", "*.pythonhosted.org:443 GET,HEAD", "[::1]:4873"]
[egress.credential_env]
GITHUB_TOKEN = ["api.github.com", "uploads.github.com:443"]
[tools.safe_bash]
egress_allow = ["example.com"]
[mcp.servers.gh]
egress_allow = ["api.github.com:443 GET"]
`, nil},
		{"home", "[home]\npresets_off = [\"java\"]\nread_only = [\"~/src/shared\"]\n", nil},
		{"salience rule", "[[salience.rules]]\nname = \"quirk\"\npattern = \"QUIRK-[0-9]+\"\nkind = \"summary\"\n", nil},
		{"intercept rule", "[[mcp.intercept.rules]]\nname = \"x\"\naction = \"drop\"\nmethod = \"tools/*\"\n", nil},

		// Decoding (daemon/config) still refuses first.
		{"unknown key", "bogus_key = 1\n", []string{"bogus_key"}},
		{"relative ca", "[egress]\nca_files = [\"ca.pem\"]\n", []string{"egress.ca_files"}},

		// daemon/netview compiles the egress rules.
		{"bad allow", "[egress]\nallow = [\"*\"]", []string{"egress.allow", `rule "*"`}},
		{"bad tool rule", "[tools.safe_bash]\negress_allow = [\"example.com:99999\"]", []string{"tools.safe_bash.egress_allow"}},
		{"bad server rule", "[mcp.servers.gh]\negress_allow = [\"exa mple.com\"]", []string{"mcp.servers.gh.egress_allow"}},
		{"wildcard credential", "[egress.credential_env]\nGITHUB_TOKEN = [\"*.github.com\"]\n", []string{"egress.credential_env.GITHUB_TOKEN", "wildcard"}},

		// daemon/homeview checks the presets and the deny-list.
		{"unknown preset", "[home]\npresets_off = [\"gov\"]\n", []string{"home.presets_off", `"gov"`, "go, node"}},
		{"ssh", "[tools.safe_bash]\nread_only = [\"" + home + "/.ssh\"]\n", []string{"tools.safe_bash.read_only", "deny-list"}},
		{"home itself", "[tools.safe_read]\nread_write = [\"" + home + "\"]\n", []string{"tools.safe_read.read_write", "deny-list"}},
		{"below a denied path", "[home]\nread_only = [\"~/.aws/credentials\"]\n", []string{"home.read_only", "deny-list"}},
		{"server path", "[mcp.servers.x]\nread_only = [\"" + home + "/.config\"]\n", []string{"mcp.servers.x.read_only", "deny-list"}},
		{"server rw path", "[mcp.servers.x]\nread_write = [\"" + home + "/.ssh\"]\n", []string{"mcp.servers.x.read_write", "deny-list"}},

		// salience compiles its rules.
		{"bad salience pattern", "[[salience.rules]]\nname = \"q\"\npattern = \"(\"\n", []string{"salience.rules", `"q"`}},
		{"bad salience kind", "[[salience.rules]]\nname = \"q\"\npattern = \"x\"\nkind = \"loud\"\n", []string{"salience.rules", `"loud"`}},
		{"salience off, rules still checked", "[salience]\nenabled = false\n[[salience.rules]]\nname = \"q\"\npattern = \"\"\n", []string{"salience.rules", "empty pattern"}},

		// mcp/intercept compiles the firewall's rules.
		{"bad intercept action", "[[mcp.intercept.rules]]\nname = \"x\"\naction = \"explode\"\n", []string{"mcp.intercept.rules[0]", `"explode"`}},
		{"bad intercept allow", "[mcp.intercept.allow]\ns = ['x\\']\n", []string{"mcp.intercept.allow.s"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkLoad(t, tc.toml, tc.want) })
	}
}

// A configuration that is no file's (the defaults, or one built in a test)
// is checked the same way, its error naming no file.
func TestCheckWithoutFile(t *testing.T) {
	if err := configcheck.Check(config.Default()); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	c := config.Default()
	c.Egress.Allow = []string{"*"}
	err := configcheck.Check(c)
	if !errors.Is(err, catalog.ErrConfig) || !strings.HasPrefix(err.Error(), catalog.ErrConfig.Error()+": egress.allow: ") {
		t.Fatalf("Check = %v", err)
	}
}

// Salience compiles the user's rules after the built-in ones.
func TestSalience(t *testing.T) {
	want := config.SalienceRule{Name: "quirk", Pattern: "QUIRK-[0-9]+", Kind: "summary", Before: 1, After: 2}
	set, err := configcheck.Salience(config.Salience{Rules: []config.SalienceRule{want}})
	if err != nil {
		t.Fatal(err)
	}
	if u := set.UserRules(); len(u) != 1 || config.SalienceRule(u[0]) != want {
		t.Fatalf("user rules %+v, want %+v", u, want)
	}
	if i := set.Match([]byte("QUIRK-42 happened"), false); i < 0 || set.Rule(i).Name != "quirk" {
		t.Errorf("the user's rule does not match its line: %d", i)
	}
	if _, err := configcheck.Salience(config.Salience{Rules: []config.SalienceRule{{Name: "q", Pattern: "x", Kind: "loud"}}}); err == nil || !strings.HasPrefix(err.Error(), "salience.rules: ") {
		t.Fatalf("bad kind: %v", err)
	}
}

// The HTTP API's TCP address must be loopback, and every automation must
// compile (its secret file, workspace and templates), or the file is
// refused at load naming the key.
func TestHTTPAndAutomations(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "ci.secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := "[[automations]]\nname = \"ci\"\nworkspace = \"" + dir + "\"\nscheme = \"github\"\nsecret_file = \"" + secret + "\"\ntool = \"safe_bash\"\n"
	for _, tc := range []struct {
		name, toml string
		want       []string // substrings of the error; nil when valid
	}{
		{"loopback v4", "[http]\ntcp = \"127.0.0.1:7070\"\n", nil},
		{"loopback v6", "[http]\ntcp = \"[::1]:7070\"\n", nil},
		// A name is refused: the daemon binds an address, and what a name
		// resolves to is not its to decide.
		{"localhost", "[http]\ntcp = \"localhost:7070\"\n", []string{"[http] tcp", "loopback address"}},
		{"any address", "[http]\ntcp = \"0.0.0.0:7070\"\n", []string{"[http] tcp", "loopback address"}},
		{"lan address", "[http]\ntcp = \"192.168.1.2:7070\"\n", []string{"[http] tcp", "loopback address"}},
		{"host name", "[http]\ntcp = \"example.com:7070\"\n", []string{"[http] tcp", "loopback address"}},
		{"automation", hook + "input = { command = 'echo \"$CONTEXTD_HOOK_REF\"' }\nenv = { REF = \"ref\" }\n", nil},
		{"automation without its command", hook, []string{"automations.ci.input", `safe_bash needs "command"`}},
		{"automation with args on safe_bash", hook + "input = { command = \"true\" }\nargs = { command = \"x\" }\n", []string{"automations.ci.args"}},
		{"automation secret", strings.Replace(hook, secret, secret+".none", 1) + "input = { command = \"true\" }\n", []string{"automations.ci.secret_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkLoad(t, tc.toml, tc.want) })
	}
}

// checkLoad loads toml from a file: with want nil it must load; otherwise
// the error must be a configuration error naming the file and each of want.
func checkLoad(t *testing.T, toml string, want []string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := configcheck.Load(p)
	if want == nil {
		if err != nil || c.Source != p {
			t.Fatalf("Load = %+v, %v", c, err)
		}
		return
	}
	if !errors.Is(err, catalog.ErrConfig) || c != nil {
		t.Fatalf("Load = %+v, %v; want %s", c, err, catalog.ErrConfig.Code)
	}
	for _, s := range append(want, "config "+p+": ") {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
}
