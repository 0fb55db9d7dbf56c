package install

// Editing TOML files as text: install appends whole tables ([mcp_servers.contextd])
// at the end of a file, or inserts one `key = value` line after the last
// statement of a table's section, and uninstall takes exactly that text out
// again. Nothing else in the file is rewritten.

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strconv"
	"strings"

	"github.com/contextd/contextd/catalog"
)

// tomlEntry is one thing install added to a TOML file: a whole table (Key
// empty), or the line setting Key in Table (the top level when Table is
// empty).
type tomlEntry struct {
	File        string   `json:"file"`
	Table       []string `json:"table,omitempty"`
	Key         string   `json:"key,omitempty"`
	Text        string   `json:"text"`             // exactly what was written (the table's statements, or the line)
	Prefix      string   `json:"prefix,omitempty"` // line break(s) written before it
	CreatedFile bool     `json:"created_file,omitempty"`
	Replaced    string   `json:"replaced,omitempty"` // the user's text --force replaced
}

// tkv is one key install wants set, with its value as TOML text.
type tkv struct {
	key   string
	value any    // its meaning, as parseTOML decodes it
	text  string // as written
}

func tomlString(s string) string { return strconv.Quote(s) }

func tomlStrings(ss []string) (string, []any) {
	parts := make([]string, len(ss))
	vals := make([]any, len(ss))
	for i, s := range ss {
		parts[i], vals[i] = tomlString(s), s
	}
	return "[" + strings.Join(parts, ", ") + "]", vals
}

func tkvString(k, v string) tkv { return tkv{k, v, tomlString(v)} }
func tkvBool(k string, v bool) tkv {
	return tkv{k, v, strconv.FormatBool(v)}
}

// tomlKey writes a key bare when it can be, else quoted.
func tomlKey(k string) string {
	if k == "" {
		return `""`
	}
	for i := 0; i < len(k); i++ {
		if !isBare(k[i]) {
			return tomlString(k)
		}
	}
	return k
}

func tomlHeader(table []string) string {
	parts := make([]string, len(table))
	for i, k := range table {
		parts[i] = tomlKey(k)
	}
	return "[" + strings.Join(parts, ".") + "]"
}

// tomlFile is a TOML file being edited; a missing file reads as empty.
type tomlFile struct {
	rel, abs string
	exists   bool
	src      string
	doc      *tdoc
	nl       string
}

func loadTOML(root, relPath string) (*tomlFile, error) {
	f := &tomlFile{rel: relPath, abs: abs(root, relPath), nl: "\n"}
	b, err := readIn(root, relPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, catalog.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file; nothing was changed: %w", relPath, catalog.ErrConflict)
	case err != nil:
		return nil, err
	default:
		f.exists = true
	}
	if strings.Contains(string(b), "\r\n") {
		f.nl = "\r\n"
	}
	if err := f.set(string(b)); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *tomlFile) set(src string) error {
	d, err := parseTOML(src)
	if err != nil {
		return fmt.Errorf("%s is not TOML contextd can edit (%v); fix it, then run install again; nothing was changed: %w", f.rel, err, catalog.ErrConflict)
	}
	f.src, f.doc = src, d
	return nil
}

// appendText is where a new table goes: the end, after a blank line.
func (f *tomlFile) appendText(text string) (prefix string, out string) {
	switch {
	case f.src == "":
	case strings.HasSuffix(f.src, "\n\n") || strings.HasSuffix(f.src, "\n\r\n"):
	case strings.HasSuffix(f.src, "\n"):
		prefix = f.nl
	default:
		prefix = f.nl + f.nl
	}
	return prefix, f.src + prefix + text
}

// insertLine puts line at pos (a line start, or the end of the document).
func (f *tomlFile) insertLine(pos int, line string) (prefix, text, out string) {
	text = line + f.nl
	if pos == len(f.src) && f.src != "" && !strings.HasSuffix(f.src, "\n") {
		prefix, text = f.nl, line
	}
	return prefix, text, f.src[:pos] + prefix + text + f.src[pos:]
}

// tableText is a table as install writes it.
func (f *tomlFile) tableText(table []string, kvs []tkv) string {
	var b strings.Builder
	b.WriteString(tomlHeader(table) + f.nl)
	for _, kv := range kvs {
		b.WriteString(tomlKey(kv.key) + " = " + kv.text + f.nl)
	}
	return b.String()
}

// sectionSpan is the text of the section opened at header h: from the
// header's line to the end of its last statement's line (comments and blank
// lines after it are not part of it).
func (f *tomlFile) sectionSpan(h int) (int, int) {
	last := f.doc.sectionEnd(h) - 1
	return f.doc.stmts[h].lineStart, f.doc.stmts[last].lineEnd
}

func kvMap(kvs []tkv) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[kv.key] = kv.value
	}
	return m
}

func findTOMLEntry(m *agentManifest, file string, table []string, key string) *tomlEntry {
	for i := range m.TOML {
		e := &m.TOML[i]
		if e.File == file && slicesEqual(e.Table, table) && e.Key == key {
			return e
		}
	}
	return nil
}

func putTOMLEntry(m *agentManifest, e tomlEntry) {
	if p := findTOMLEntry(m, e.File, e.Table, e.Key); p != nil {
		*p = e
		return
	}
	m.TOML = append(m.TOML, e)
}

// ownTable makes table hold exactly kvs (a table that is contextd's:
// [mcp_servers.contextd], [projects."<root>"]).
func (f *tomlFile) ownTable(table []string, kvs []tkv, prev *tomlEntry, force bool, e *fileEdit, records *[]tomlEntry) error {
	name := strings.Join(table, ".")
	text := f.tableText(table, kvs)
	entry := tomlEntry{File: f.rel, Table: table, Text: text, CreatedFile: !f.exists}
	if prev != nil {
		entry.Prefix, entry.CreatedFile, entry.Replaced = prev.Prefix, prev.CreatedFile, prev.Replaced
	}
	n := f.doc.lookup(table)
	if n == nil {
		var out string
		entry.Prefix, out = f.appendText(text)
		if err := f.set(out); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", f.rel, err, catalog.ErrInternal)
		}
		e.actions = append(e.actions, "added "+name)
		*records = append(*records, entry)
		return nil
	}
	if n.kind != 'V' && reflect.DeepEqual(n.plain(), kvMap(kvs)) {
		if prev != nil {
			*records = append(*records, entry)
			e.actions = append(e.actions, "unchanged ("+name+")")
		} else {
			e.actions = append(e.actions, "unchanged ("+name+" was already there, left as yours)")
		}
		return nil
	}
	h := f.doc.section(table)
	what := "updated " + name
	var start, end int
	if h >= 0 {
		start, end = f.sectionSpan(h)
	}
	switch {
	case h >= 0 && prev != nil && f.src[start:end] == prev.Text:
	case h >= 0 && force && noSubTables(f.doc, table, h):
		if entry.Replaced == "" {
			entry.Replaced = f.src[start:end]
		}
		what = "replaced " + name + " (--force)"
	case force:
		return fmt.Errorf("%s sets %s in a form contextd does not rewrite; edit it by hand; nothing was changed: %w", f.rel, name, catalog.ErrConflict)
	default:
		return fmt.Errorf("%s already has a %s entry that contextd did not write; leave it, remove it, or run install --force to replace it (uninstall puts yours back); nothing was changed: %w", f.rel, name, catalog.ErrConflict)
	}
	if err := f.set(f.src[:start] + text + f.src[end:]); err != nil {
		return fmt.Errorf("%s: editing it went wrong (%v): %w", f.rel, err, catalog.ErrInternal)
	}
	e.actions = append(e.actions, what)
	*records = append(*records, entry)
	return nil
}

// noSubTables reports whether no later header opens a table under table
// (replacing the section then replaces the whole table).
func noSubTables(d *tdoc, table []string, h int) bool {
	for _, s := range d.stmts[h+1:] {
		if s.header && len(s.table) > len(table) && slicesEqual(s.table[:len(table)], table) {
			return false
		}
	}
	return true
}

// setKeys makes each key of kvs hold its value in table (the top level when
// table is empty), leaving the table's other keys alone.
func (f *tomlFile) setKeys(table []string, kvs []tkv, m *agentManifest, force bool, e *fileEdit, records *[]tomlEntry) error {
	var missing []tkv
	if chunk := findTOMLEntry(m, f.rel, table, ""); chunk != nil && len(table) > 0 {
		// A table install created whole: kept while it is there.
		if f.doc.lookup(table) != nil {
			*records = append(*records, *chunk)
		}
	}
	for _, kv := range kvs {
		full := append(append([]string{}, table...), kv.key)
		dotted := strings.Join(full, ".")
		prev := findTOMLEntry(m, f.rel, table, kv.key)
		n := f.doc.lookup(full)
		if n == nil {
			missing = append(missing, kv)
			continue
		}
		if n.kind == 'V' && reflect.DeepEqual(n.value, kv.value) {
			if prev != nil {
				*records = append(*records, *prev)
				e.actions = append(e.actions, "unchanged ("+dotted+")")
			} else if findTOMLEntry(m, f.rel, table, "") == nil {
				e.actions = append(e.actions, "unchanged ("+dotted+" was already set so, left as yours)")
			} else {
				e.actions = append(e.actions, "unchanged ("+dotted+")")
			}
			continue
		}
		h := -1
		if len(table) > 0 {
			h = f.doc.section(table)
		}
		i := -1
		if h >= 0 || len(table) == 0 {
			i = f.doc.keyStmt(h, kv.key)
		}
		if i < 0 {
			return fmt.Errorf("%s sets %s in a form contextd does not rewrite; set it to %s by hand; nothing was changed: %w", f.rel, dotted, kv.text, catalog.ErrConflict)
		}
		st := f.doc.stmts[i]
		old := f.src[st.lineStart:st.lineEnd]
		entry := tomlEntry{File: f.rel, Table: table, Key: kv.key}
		switch {
		case prev != nil && old == prev.Text:
			entry.Replaced = prev.Replaced
		case force:
			entry.Replaced = old
		default:
			return fmt.Errorf("%s sets %s = %s, not %s as contextd needs; change it, or run install --force to replace it (uninstall puts yours back); nothing was changed: %w",
				f.rel, dotted, strings.TrimSpace(stmtValueText(old)), kv.text, catalog.ErrConflict)
		}
		entry.Text = tomlKey(kv.key) + " = " + kv.text + old[len(strings.TrimRight(old, "\r\n")):]
		if err := f.set(f.src[:st.lineStart] + entry.Text + f.src[st.lineEnd:]); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", f.rel, err, catalog.ErrInternal)
		}
		e.actions = append(e.actions, "set "+dotted+" = "+kv.text)
		*records = append(*records, entry)
	}
	if len(missing) == 0 {
		return nil
	}
	name := strings.Join(table, ".")
	if len(table) > 0 && f.doc.lookup(table) == nil {
		text := f.tableText(table, missing)
		entry := tomlEntry{File: f.rel, Table: table, Text: text, CreatedFile: !f.exists}
		var out string
		entry.Prefix, out = f.appendText(text)
		if err := f.set(out); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", f.rel, err, catalog.ErrInternal)
		}
		e.actions = append(e.actions, "added "+name)
		*records = append(*records, entry)
		return nil
	}
	for _, kv := range missing {
		pos, err := f.keyPosition(table)
		if err != nil {
			return err
		}
		entry := tomlEntry{File: f.rel, Table: table, Key: kv.key, CreatedFile: !f.exists}
		var out string
		entry.Prefix, entry.Text, out = f.insertLine(pos, tomlKey(kv.key)+" = "+kv.text)
		if err := f.set(out); err != nil {
			return fmt.Errorf("%s: editing it went wrong (%v): %w", f.rel, err, catalog.ErrInternal)
		}
		e.actions = append(e.actions, "set "+strings.Join(append(append([]string{}, table...), kv.key), ".")+" = "+kv.text)
		*records = append(*records, entry)
	}
	return nil
}

// keyPosition is where a new key line of table goes: after the last
// statement of its section (after its header when it has none); for the top
// level, after its last statement, else before the first table.
func (f *tomlFile) keyPosition(table []string) (int, error) {
	d := f.doc
	if len(table) == 0 {
		end := d.sectionEnd(-1)
		switch {
		case end > 0:
			return d.stmts[end-1].lineEnd, nil
		case len(d.stmts) > 0:
			return d.stmts[0].lineStart, nil
		}
		return len(f.src), nil
	}
	h := d.section(table)
	if h < 0 {
		return 0, fmt.Errorf("%s defines %s in a form contextd does not add keys to (dotted keys or an inline table); nothing was changed: %w", f.rel, strings.Join(table, "."), catalog.ErrConflict)
	}
	return d.stmts[d.sectionEnd(h)-1].lineEnd, nil
}

// stmtValueText is the text after the = of a key/value line.
func stmtValueText(line string) string {
	if _, v, ok := strings.Cut(line, "="); ok {
		return v
	}
	return line
}

// undoTOML takes one recorded entry out of its file if it is still as
// install wrote it.
func undoTOML(root string, e tomlEntry, rep *AgentReport) error {
	p := abs(root, e.File)
	b, err := readIn(root, e.File)
	if errors.Is(err, fs.ErrNotExist) {
		rep.did(e.File, "already gone")
		return nil
	}
	if err != nil {
		return err
	}
	out, what, err := undoTOMLEntry(e.File, string(b), e)
	if err != nil {
		return err
	}
	rep.did(e.File, what)
	if out == string(b) {
		return nil
	}
	if e.CreatedFile && strings.TrimSpace(out) == "" {
		if err := removeIn(root, p, false); err != nil {
			return fmt.Errorf("remove %s: %v: %w", e.File, err, catalog.ErrIO)
		}
		rep.did(e.File, "removed (left empty)")
		return nil
	}
	return writeIn(root, p, []byte(out))
}

// undoTOMLText is undoTOMLEntry for a file without a name.
func undoTOMLText(src string, e tomlEntry) (string, error) {
	out, _, err := undoTOMLEntry("config.toml", src, e)
	return out, err
}

// undoTOMLEntry takes e out of src, and says what it did.
func undoTOMLEntry(file, src string, e tomlEntry) (string, string, error) {
	f := &tomlFile{rel: file}
	if err := f.set(src); err != nil {
		return src, "", err
	}
	name := strings.Join(e.Table, ".")
	if e.Key != "" {
		name = strings.Join(append(append([]string{}, e.Table...), e.Key), ".")
	}
	var start, end int
	if e.Key == "" {
		h := f.doc.section(e.Table)
		if h < 0 {
			return src, name + " already gone", nil
		}
		start, end = f.sectionSpan(h)
	} else {
		h := -1
		if len(e.Table) > 0 {
			if h = f.doc.section(e.Table); h < 0 {
				return src, name + " already gone", nil
			}
		}
		i := f.doc.keyStmt(h, e.Key)
		if i < 0 {
			return src, name + " already gone", nil
		}
		start, end = f.doc.stmts[i].lineStart, f.doc.stmts[i].lineEnd
	}
	if src[start:end] != e.Text {
		return src, "kept " + name + " (changed since install)", nil
	}
	if e.Replaced != "" {
		return src[:start] + e.Replaced + src[end:], "restored your own " + name, nil
	}
	if strings.HasSuffix(src[:start], e.Prefix) {
		start -= len(e.Prefix)
	}
	return src[:start] + src[end:], "removed " + name, nil
}
