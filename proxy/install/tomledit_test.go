package install

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/contextd/contextd/catalog"
)

// libValue decodes src with BurntSushi/toml (the library the daemon uses),
// normalised to the shapes parseTOML produces: dates and times as nil (their
// text is not compared), integers as int64.
func libValue(src string) (any, error) {
	var v map[string]any
	if _, err := toml.Decode(src, &v); err != nil {
		return nil, err
	}
	return normLib(v), nil
}

func normLib(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normLib(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normLib(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normLib(e)
		}
		return out
	case string, bool, int64:
		return x
	case float64:
		if math.IsNaN(x) {
			return "nan"
		}
		return x
	}
	return nil // dates, times
}

// normOurs brings parseTOML's meaning to libValue's shapes.
func normOurs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normOurs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normOurs(e)
		}
		return out
	case float64:
		if math.IsNaN(x) {
			return "nan"
		}
		return x
	case string:
		return x
	case bool, int64:
		return x
	}
	return nil
}

// ourValue is the meaning parseTOML gives src; scalar dates come back as
// their text, so they are blanked on both sides by comparing through
// libValue's shapes (a date is a string in ours: compared only as present).
func ourValue(d *tdoc) any { return normOurs(d.root.plain()) }

func TestParseTOML(t *testing.T) {
	good := []string{
		"",
		"# only a comment\n",
		"a = 1\nb = \"two\" # trailing\n\n[t]\nc = [1, 2,\n  3, # c\n]\n",
		"[a.b]\nx = 1\n[a]\ny = 2\n",
		"[[arr]]\nn = 1\n[[arr]]\nn = 2\n",
		"k = { a = 1, b.c = \"x\" }\n",
		"'lit key' = 'C:\\path'\n\"q\\u00e9\" = \"\"\"\nmulti\\\n   line\"\"\"\n",
		"d = 1979-05-27T07:32:00Z\nt = 07:32:00\nf = 6.02e23\nh = 0xdead_beef\n",
		"[projects.\"/home/u/p\"]\ntrust_level = \"trusted\"\r\n",
		"a.b.c = 1\na.b.d = 2\n",
	}
	for _, src := range good {
		d, err := parseTOML(src)
		if err != nil {
			t.Errorf("refused %q: %v", src, err)
			continue
		}
		lib, err := libValue(src)
		if err != nil {
			t.Errorf("the library refuses %q: %v", src, err)
			continue
		}
		if got := ourValue(d); !sameTOMLMeaning(got, lib) {
			t.Errorf("%q means %v, the library reads %v", src, got, lib)
		}
	}
	bad := []string{
		"a = \n",
		"a = 1 b = 2\n",
		"[t]\n[t]\n",
		"a = 1\na = 2\n",
		"a = \"unterminated\n",
		"a = 01\n",
		"a = { b = 1\n",
		"[a]\nb = 1\n[a.b]\n",
		"a = [1 2]\n",
		"a = 1\r",
		"a = \"\\q\"\n",
		"a.b = 1\n[a]\n",
		"x = 2026-13-01\n",
		"# bad \x01 comment\n",
	}
	for _, src := range bad {
		if _, err := parseTOML(src); err == nil {
			t.Errorf("accepted %q", src)
		}
	}
}

// sameTOMLMeaning compares, treating our date text as matching the library's
// nil.
func sameTOMLMeaning(ours, lib any) bool {
	switch l := lib.(type) {
	case nil:
		return true // a date or time: present on both sides is enough
	case map[string]any:
		o, ok := ours.(map[string]any)
		if !ok || len(o) != len(l) {
			return false
		}
		for k, v := range l {
			if ov, ok := o[k]; !ok || !sameTOMLMeaning(ov, v) {
				return false
			}
		}
		return true
	case []any:
		o, ok := ours.([]any)
		if !ok || len(o) != len(l) {
			return false
		}
		for i := range l {
			if !sameTOMLMeaning(o[i], l[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(ours, lib)
}

// FuzzParseTOML: every document the parser accepts, BurntSushi/toml accepts
// with the same meaning (install never edits a file Codex could not read).
func FuzzParseTOML(f *testing.F) {
	for _, s := range []string{"a = 1\n[t]\nb = [1, 'x']\n", "[x.\"y z\"]\nk = { a = true }\n", "s = \"\"\"\nq\\\n\"\"\"\n", "[[a]]\n[a.b]\nc=1\n", "t = 1979-05-27 07:32:00\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var d *tdoc
		var err error
		done := make(chan struct{})
		go func() { d, err = parseTOML(src); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("parseTOML(%q) hangs", src)
		}
		if err != nil {
			return
		}
		var lib any
		done = make(chan struct{})
		go func() { lib, err = libValue(src); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the library hangs on %q", src)
		}
		if err != nil {
			t.Fatalf("accepted %q, which the library refuses: %v", src, err)
		}
		if got := ourValue(d); !sameTOMLMeaning(got, lib) {
			t.Fatalf("%q means %v, the library reads %v", src, got, lib)
		}
	})
}

// FuzzTOMLEdit: in any document the parser accepts, setting keys and adding
// contextd's table, then undoing them, gives the document back byte for byte;
// the edited document is valid TOML holding the wanted values.
func FuzzTOMLEdit(f *testing.F) {
	for _, s := range []string{"", "a = 1", "[features]\nx = true\n", "# c\n[t]\n", "model = 'o3'\r\n[mcp_servers.gh]\r\ncommand = \"x\"\r\n", "[features]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tf := &tomlFile{rel: "config.toml", nl: "\n", exists: true}
		if strings.Contains(src, "\r\n") {
			tf.nl = "\r\n"
		}
		if tf.set(src) != nil {
			return
		}
		m := &agentManifest{}
		e := &fileEdit{}
		var recs []tomlEntry
		err := tf.setKeys(nil, []tkv{tkvString("sandbox_mode", "read-only")}, m, false, e, &recs)
		if err == nil {
			err = tf.setKeys([]string{"features"}, []tkv{tkvBool("shell_tool", false), tkvBool("unified_exec", false)}, m, false, e, &recs)
		}
		if err == nil {
			err = tf.ownTable([]string{"mcp_servers", "contextd"}, codexMCPTable("/usr/bin/contextd-proxy"), nil, false, e, &recs)
		}
		if err != nil {
			if !errors.Is(err, catalog.ErrConflict) {
				t.Fatalf("%q: %v", src, err)
			}
			return
		}
		lib, lerr := libValue(tf.src)
		if lerr != nil {
			t.Fatalf("edited %q into invalid %q: %v", src, tf.src, lerr)
		}
		if mcp, _ := lib.(map[string]any)["mcp_servers"].(map[string]any); mcp == nil || mcp["contextd"] == nil {
			t.Fatalf("no contextd server in %q", tf.src)
		}
		// Undo, newest first, as uninstall does.
		for i := len(recs) - 1; i >= 0; i-- {
			out, err := undoTOMLText(tf.src, recs[i])
			if err != nil {
				t.Fatalf("undo %+v in %q: %v", recs[i], tf.src, err)
			}
			tf.src = out
		}
		if tf.src != src {
			t.Fatalf("install+uninstall changed\n%q\ninto\n%q", src, tf.src)
		}
	})
}
