package scrub

import (
	"reflect"
	"testing"
)

// FuzzQuickTOML: wherever both the quick parser of gitleaks' default config
// and BurntSushi/toml (the decoder every other config goes through) accept a
// document, they read the same rules. The quick parser only ever reads the
// embedded default config (TestQuickTOMLParser checks that one exactly); it
// gives up on what it does not know, and the library then reads it. It is
// more lenient than TOML in places (a duplicate key, a table named twice)
// that no gitleaks release has used.
func FuzzQuickTOML(f *testing.F) {
	def := gitleaksDefaultConfig()
	f.Add(def[:min(len(def), 4000)])
	f.Add("title = \"t\"\n[[rules]]\nid = \"a\"\nregex = '''x\\d+'''\nkeywords = [\"x\", 'y']\nentropy = 3.5\n")
	f.Add("[[rules]]\nid = \"a\"\nregex = \"\"\"\nab\\\"c\"\"\"\nsecretGroup = 2\n[[rules.allowlists]]\nregexes = ['''^z''']\nstopwords = [\"s\",]\n")
	f.Add("[allowlist]\ndescription = \"d\"\npaths = [\n  '''a''',\n  # c\n  '''b'''\n]\n")
	f.Add("[[rules]]\nid = 'q'\nregex = '''a'''\ntags = [] # none\n")
	f.Fuzz(func(t *testing.T, src string) {
		quick, err := parseDefaultTOML(src)
		if err != nil {
			return
		}
		full, lerr := decodeTOML(src, "fuzz")
		if lerr != nil {
			return
		}
		if !reflect.DeepEqual(quick, full) {
			t.Fatalf("%q: the quick parser reads\n%+v\nBurntSushi/toml reads\n%+v", src, quick, full)
		}
	})
}
