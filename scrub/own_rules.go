package scrub

import (
	"bytes"
	"strings"
)

// contextd's own rules, for what gitleaks' rules leave out: a credential is often just a
// random string assigned to a name that says what it is, or the password of a URL.
const (
	RuleEnvCredential = "contextd-env-credential"
	RuleURLCredential = "contextd-url-credential"
)

// maxLead is how much text may precede a name at the start of a statement.
const maxLead = 64

// envKeywords wake the assignment rule; the name around the hit decides.
var envKeywords = []string{"token", "secret", "pass", "pwd", "key", "credential", "auth"}

const urlKeyword = "://"

// credentialWords are the last word of a name that holds a credential by itself.
var credentialWords = map[string]bool{
	"token": true, "secret": true, "password": true, "passwd": true, "passphrase": true,
	"pass": true, "pwd": true, "credential": true, "credentials": true, "auth": true,
	"apikey": true, "secretkey": true, "privatekey": true, "accesskey": true,
	"authtoken": true, "clientsecret": true, "accesstoken": true,
}

// nonSecretKeys are words before "key" that name a key which is not a credential.
var nonSecretKeys = map[string]bool{
	"public": true, "pub": true, "primary": true, "foreign": true, "sort": true,
	"partition": true, "cache": true, "hash": true, "map": true, "row": true,
	"idempotency": true, "routing": true, "route": true, "lookup": true, "index": true,
	"unique": true, "composite": true, "natural": true, "registry": true, "host": true,
	"dedup": true, "shard": true, "range": true, "object": true, "s3": true, "bucket": true,
	"group": true, "context": true, "config": true, "cert": true, "i18n": true,
	"translation": true, "label": true, "annotation": true, "blob": true, "file": true,
	"field": true, "column": true, "attr": true, "attribute": true, "item": true,
	"entry": true, "record": true, "node": true, "element": true, "dict": true,
	"query": true, "param": true, "header": true, "order": true, "hot": true,
	"short": true, "shortcut": true, "sorting": true, "react": true, "list": true,
}

func isNameByte(c byte) bool {
	return isASCIIWord(c) || c == '-' || c == '.'
}

// lastWords returns the last word of a name and the one before it (nil if none), in
// lower case, the name split at '_', '-', '.' and camelCase humps. They are written
// into buf when it is large enough: this runs on every credential-like word in the text.
func lastWords(name, buf []byte) (last, prev []byte) {
	low := buf[:0]
	ps, pe, ls, le := -1, -1, -1, -1 // the two last words, in low
	cs := 0                          // the current word's start in low
	flush := func() {
		if len(low) > cs {
			ps, pe, ls, le = ls, le, cs, len(low)
			cs = len(low)
		}
	}
	for i, c := range name {
		switch {
		case c == '_' || c == '-' || c == '.':
			flush()
		case 'A' <= c && c <= 'Z':
			// A hump: lower->Upper, or the last capital of an acronym before a lower.
			if i > 0 && ('a' <= name[i-1] && name[i-1] <= 'z' || '0' <= name[i-1] && name[i-1] <= '9') {
				flush()
			} else if i > 0 && 'A' <= name[i-1] && name[i-1] <= 'Z' && i+1 < len(name) && 'a' <= name[i+1] && name[i+1] <= 'z' {
				flush()
			}
			low = append(low, c+'a'-'A')
		default:
			low = append(low, c)
		}
	}
	flush()
	if ls < 0 {
		return nil, nil
	}
	if ps >= 0 {
		prev = low[ps:pe]
	}
	return low[ls:le], prev
}

// credentialName reports whether a name says it holds a credential: its last word is
// one (PASSWORD, DB_PASS, GITHUB_TOKEN, clientSecret), or it is <something>_KEY with a
// something that is not a database or cache key.
func credentialName(name []byte) bool {
	var buf [128]byte
	last, prev := lastWords(name, buf[:])
	if last == nil {
		return false
	}
	if credentialWords[string(last)] {
		return true
	}
	if string(last) == "key" && prev != nil {
		return !nonSecretKeys[string(prev)]
	}
	return false
}

// envCredential examines the name around a credential word at [hs, he) and, when it is
// assigned a random-looking value, returns the value. next is where the examined name
// ends, so the other words of the same name are skipped.
func envCredential(b []byte, hs, he int) (c cand, next int, ok bool) {
	ns, ne := hs, he
	for ns > 0 && isNameByte(b[ns-1]) {
		ns--
	}
	for ne < len(b) && isNameByte(b[ne]) {
		ne++
	}
	// Flags: --api-key=... names the credential after the dashes.
	flag := ns
	for ns < ne && b[ns] == '-' {
		ns++
	}
	next = ne
	name := b[ns:ne]
	if len(name) == 0 || len(name) > 128 || !credentialName(name) {
		return cand{}, next, false
	}
	vs, ve, ok := assignedValue(b, flag, ns, ne)
	if !ok {
		vs, ve, ok = listedValue(b, ns, ne)
	}
	if !ok || !looksRandom(b[vs:ve]) {
		return cand{}, next, false
	}
	return cand{rule: ownEnv, start: vs, end: ve, mstart: ns}, next, true
}

// listedValue handles the name/value pairs of Kubernetes and similar YAML, where the
// credential's name is itself a value and its value is on the next line:
//
//	env:
//	  - name: DB_PASSWORD
//	    value: "s3cr3t..."
func listedValue(b []byte, ns, ne int) (vs, ve int, ok bool) {
	ls := bytes.LastIndexByte(b[max(0, ns-maxLead):ns], '\n')
	if ls < 0 && ns > maxLead {
		return 0, 0, false
	}
	ls += max(0, ns-maxLead) + 1
	lead := strings.TrimLeft(string(b[ls:ns]), " ")
	lead = strings.TrimPrefix(lead, "- ")
	lead = strings.TrimRight(strings.TrimPrefix(lead, "name:"), " \"'")
	if lead != "" || !strings.Contains(string(b[ls:ns]), "name:") {
		return 0, 0, false
	}
	// The rest of the name's line may only close its quote.
	le := bytes.IndexByte(b[ne:], '\n')
	if le < 0 || strings.Trim(string(b[ne:ne+le]), " \"'\r") != "" {
		return 0, 0, false
	}
	p := ne + le + 1
	for p < len(b) && b[p] == ' ' {
		p++
	}
	if !bytes.HasPrefix(b[p:], []byte("value:")) {
		return 0, 0, false
	}
	p += len("value:")
	for p < len(b) && b[p] == ' ' {
		p++
	}
	return valueAt(b, p, true)
}

// assignedValue finds the value assigned to the name at [ns, ne) in one of the forms
// contextd recognises, and returns its span without quotes:
//
//	NAME=value, export NAME="value"       (shell, .env, command lines, --flag=value)
//	NAME: value                           (YAML: a line's first key, indented with spaces)
//	"NAME": "value", 'NAME' => 'value'    (JSON, Python, Ruby, PHP)
//	NAME = 'value'                        (TOML, INI: at the start of a line)
//
// Code that only resembles these (Go struct fields and constants, indented with tabs;
// const/var/let declarations; x := f(y)) is left out on purpose: gitleaks' generic rule
// covers literal secrets in code, and code is full of credential-named identifiers.
func assignedValue(b []byte, flag, ns, ne int) (vs, ve int, ok bool) {
	quotedName := ns > 0 && ne < len(b) && (b[ns-1] == '"' || b[ns-1] == '\'') && b[ne] == b[ns-1]
	// What precedes the name on its line matters only if it is short (indentation, a
	// keyword): look back a little, not to the start of a megabyte-long line.
	lineStart := max(0, flag-maxLead)
	if i := bytes.LastIndexByte(b[lineStart:flag], '\n'); i >= 0 {
		lineStart += i + 1
	} else if lineStart > 0 {
		lineStart = -1
	}
	var before []byte
	switch {
	case lineStart < 0:
		before = []byte("…") // a long way from the line start: not a statement start
		lineStart = flag - 1
	case quotedName:
		before = b[lineStart : ns-1]
	default:
		before = b[lineStart:flag]
	}
	atStart := statementStart(before)
	p := ne
	if quotedName {
		p++
	}
	// Spaces before the operator.
	sp := p
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
	}
	spaced := p > sp
	if p >= len(b) {
		return 0, 0, false
	}
	var form byte
	switch {
	case b[p] == '=' && p+1 < len(b) && b[p+1] == '>' && quotedName:
		form = 'j'
		p += 2
	case b[p] == ':' && p+1 < len(b) && b[p+1] == '=':
		return 0, 0, false
	case b[p] == '=' && p+1 < len(b) && b[p+1] == '=':
		return 0, 0, false
	case b[p] == '=':
		switch {
		case quotedName:
			return 0, 0, false
		case !spaced && (atStart || precededBySpace(b, flag, lineStart)):
			form = 'e'
		case atStart:
			form = 't'
		default:
			return 0, 0, false
		}
		p++
	case b[p] == ':':
		switch {
		case quotedName:
			form = 'j'
		case !spaced && atStart && yamlIndent(before):
			form = 'y'
		default:
			return 0, 0, false
		}
		p++
	default:
		return 0, 0, false
	}
	if form == 'e' {
		// NAME=value: the value starts right after '=' (an empty value is not a value).
		return valueAt(b, p, false)
	}
	for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
		p++
	}
	if form == 'j' && (p >= len(b) || b[p] != '"' && b[p] != '\'') {
		// JSON-like forms: only string values; numbers and objects are not credentials.
		return 0, 0, false
	}
	return valueAt(b, p, form == 'y')
}

// statementStart reports whether the text before a name on its line makes the name the
// start of a statement: nothing, spaces (not tabs), "- " (a YAML list item) or a
// declaration keyword.
func statementStart(before []byte) bool {
	s := strings.TrimLeft(string(before), " ")
	if strings.ContainsRune(s, '\t') || len(before) > 0 && before[0] == '\t' {
		return false
	}
	s = strings.TrimPrefix(s, "- ")
	for _, kw := range []string{"export ", "set ", "ENV ", "readonly ", "declare ", "local ", "setenv "} {
		if strings.HasPrefix(s, kw) {
			s = strings.TrimLeft(s[len(kw):], " ")
			break
		}
	}
	return s == ""
}

// yamlIndent reports whether the indentation before a YAML key is spaces only (YAML
// forbids tabs there, which is what tells it from a Go struct literal).
func yamlIndent(before []byte) bool {
	for _, c := range before {
		if c != ' ' && c != '-' {
			return false
		}
	}
	return true
}

func precededBySpace(b []byte, ns, lineStart int) bool {
	if ns == lineStart {
		return true
	}
	switch b[ns-1] {
	case ' ', '\t', ';', '(', '&', '|', '"', '\'':
		return true
	}
	return false
}

// valueAt reads the value starting at p: quoted (to the closing quote on the line) or bare
// (to whitespace or a delimiter; YAML bare values run to the end of the line or a " #").
func valueAt(b []byte, p int, yaml bool) (vs, ve int, ok bool) {
	if p >= len(b) {
		return 0, 0, false
	}
	if q := b[p]; q == '"' || q == '\'' || q == '`' {
		for i := p + 1; i < len(b) && b[i] != '\n'; i++ {
			if b[i] == '\\' && q != '\'' {
				i++
				continue
			}
			if b[i] == q {
				return p + 1, i, i > p+1
			}
		}
		return 0, 0, false
	}
	i := p
	for i < len(b) {
		c := b[i]
		if c == '\n' || c == '\r' || c == '"' || c == '\'' || c == '`' {
			break
		}
		if yaml {
			if c == ' ' && i+1 < len(b) && b[i+1] == '#' {
				break
			}
		} else if c == ' ' || c == '\t' || c == ';' || c == ',' || c == '&' || c == '|' || c == ')' || c == '}' || c == ']' || c == '<' || c == '>' {
			break
		}
		i++
	}
	for i > p && (b[i-1] == ' ' || b[i-1] == '\t') {
		i--
	}
	return p, i, i > p
}

// placeholderWords are values people write instead of a secret.
var placeholderWords = []string{
	"changeme", "change_me", "change-me", "example", "placeholder", "dummy", "redacted",
	"your_", "your-", "yourtoken", "yourkey", "yoursecret", "yourpassword", "<", ">",
	"${", "{{", "}}", "$(", "%(", "process.env", "os.environ", "getenv",
	"xxxx", "****", "....", "[redacted", "todo", "fixme", "insert", "replace",
	"secretsmanager", "vault:", "ssm:", "arn:aws", "password", "passwd", "secret",
}

// placeholderLike reports whether a value is a stand-in rather than a secret.
func placeholderLike(v []byte) bool {
	if len(v) == 0 {
		return true
	}
	lv := strings.ToLower(string(v))
	switch lv {
	case "password", "passwd", "pass", "pwd", "secret", "token", "key", "apikey", "api_key",
		"none", "null", "nil", "undefined", "true", "false", "yes", "no", "on", "off",
		"required", "optional", "string", "empty", "default", "test", "user", "username":
		return true
	}
	switch {
	case v[0] == '$' && len(v) > 1 && (v[1] == '{' || v[1] == '('):
		return true // ${VAR}, $(cmd)
	case v[0] == '$' && identifier(v[1:]):
		return true // $VAR
	case v[0] == '%' && (v[len(v)-1] == '%' || len(v) <= 3):
		return true // %VAR%, %s
	case v[0] == '@' && v[len(v)-1] == '@':
		return true // @VAR@
	}
	for _, w := range placeholderWords {
		if strings.Contains(lv, w) {
			return true
		}
	}
	// One character repeated (xxxxxxxx, ********).
	same := true
	for _, c := range v[1:] {
		if c != v[0] {
			same = false
			break
		}
	}
	return same
}

// looksRandom reports whether a value looks like a generated credential rather than a
// word, an identifier, a number, a version, a path or a reference to a secret kept
// elsewhere. It is what keeps contextd's assignment rule quiet on source code and logs.
func looksRandom(v []byte) bool {
	n := len(v)
	if n < 8 || n > 1024 || placeholderLike(v) || isVersion(v) || hasFileExt(v) {
		return false
	}
	if bytes.Contains(v, []byte("://")) || bytes.IndexByte(v, '(') >= 0 {
		return false
	}
	var lower, upper, digit, other, humps, digitRuns, vowels int
	for i, c := range v {
		switch charClass(c) {
		case 0:
			lower++
			if strings.IndexByte("aeiou", c) >= 0 {
				vowels++
			}
		case 1:
			upper++
			if strings.IndexByte("AEIOU", c) >= 0 {
				vowels++
			}
			if i > 0 && 'a' <= v[i-1] && v[i-1] <= 'z' {
				humps++
			}
		case 2:
			digit++
			if i == 0 || charClass(v[i-1]) != 2 {
				digitRuns++
			}
		default:
			if c == ' ' || c == '\t' {
				return false
			}
			other++
		}
	}
	letters := lower + upper
	if letters == 0 {
		// Numbers, dates, versions.
		return false
	}
	h := shannon(v)
	// Paths. A base64 secret may start with '/' too, but it has digits and more entropy.
	if v[0] == '/' || v[0] == '~' || bytes.HasPrefix(v, []byte("./")) || bytes.HasPrefix(v, []byte("../")) ||
		n > 2 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') {
		if digit == 0 || h < 4.3 {
			return false
		}
	}
	classes := 0
	for _, k := range []int{lower, upper, digit, other} {
		if k > 0 {
			classes++
		}
	}
	if n < 12 {
		// Short values only when they mix three kinds of characters (pa55W0rd!).
		return classes >= 3 && h >= 2.75 && digit > 0
	}
	if h < 3.0 {
		return false
	}
	// A name with a number appended (encryptionKey1024, production2024): letters that
	// make a few camelCase words, then one run of digits.
	if digitRuns == 1 && other == 0 && charClass(v[n-1]) == 2 && humps*8 <= letters && vowels*4 >= letters {
		return false
	}
	if digit > 0 || other > 0 && classes >= 3 {
		return true
	}
	// Letters only. Random strings of 16 or more almost always have a digit; without
	// one, ask for what tells random letters from words: frequent case changes (not
	// camelCase) or few vowels.
	if n < 16 || other > 0 || h < 3.5 {
		return false
	}
	if lower == 0 || upper == 0 {
		// One case (base32 keys): words have a vowel in three letters or more.
		return n >= 20 && vowels*3 < letters
	}
	return humps*6 >= n || vowels*4 < letters
}

// isVersion reports values like 1.2.3, v2.0.0-rc.1, 10.4.12+build.7.
func isVersion(v []byte) bool {
	s := strings.TrimPrefix(string(v), "v")
	core, _, _ := strings.Cut(s, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

func charClass(c byte) int {
	switch {
	case 'a' <= c && c <= 'z':
		return 0
	case 'A' <= c && c <= 'Z':
		return 1
	case '0' <= c && c <= '9':
		return 2
	}
	return 3
}

// hasFileExt reports a value that ends like a file name (key.pem, creds.json).
func hasFileExt(v []byte) bool {
	i := bytes.LastIndexByte(v, '.')
	if i <= 0 || len(v)-i > 6 {
		return false
	}
	switch strings.ToLower(string(v[i+1:])) {
	case "pem", "key", "crt", "cer", "json", "txt", "yaml", "yml", "toml", "env", "conf", "cfg",
		"ini", "p12", "pfx", "jks", "gpg", "asc", "pub", "der", "properties", "xml", "sh":
		return true
	}
	return false
}

// urlCredential examines a "://" at p: scheme://user:password@host yields the password
// (and scheme://token@host a user part that is a random token).
func urlCredential(b []byte, p int) (cand, bool) {
	ss := p
	for ss > 0 && (isAlnum(b[ss-1]) || b[ss-1] == '+' || b[ss-1] == '.' || b[ss-1] == '-') {
		ss--
	}
	if ss == p || !isAlpha(b[ss]) {
		return cand{}, false
	}
	as := p + 3
	ae := as
	at := -1
	// The authority runs to a path, a blank or a quote. '?' and '#' end it too unless an
	// '@' follows: passwords are often written with them unescaped.
	for ae < len(b) {
		c := b[ae]
		if c <= ' ' || c == '/' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == '\\' || c == 0x7f {
			break
		}
		if c == '@' {
			at = ae
		}
		ae++
	}
	if at < 0 || at+1 >= ae || !isHostStart(b[at+1]) {
		return cand{}, false
	}
	ui := b[as:at]
	colon := bytes.IndexByte(ui, ':')
	if colon < 0 {
		// A bare token as the user (https://<token>@github.com).
		if len(ui) >= 20 && looksRandom(ui) && shannon(ui) >= 3.5 {
			return cand{rule: ownURL, start: as, end: at, mstart: ss}, true
		}
		return cand{}, false
	}
	pw := ui[colon+1:]
	if !urlPassword(pw) {
		return cand{}, false
	}
	return cand{rule: ownURL, start: as + colon + 1, end: at, mstart: ss}, true
}

func identifier(b []byte) bool {
	if len(b) == 0 || !isAlpha(b[0]) && b[0] != '_' {
		return false
	}
	for _, c := range b {
		if !isASCIIWord(c) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' }
func isHostStart(c byte) bool {
	return isAlnum(c) || c == '[' || c == '_' || c >= 0x80
}

// metasyntactic words stand for any value in examples.
var metasyntactic = map[string]bool{
	"foo": true, "bar": true, "baz": true, "qux": true, "quux": true, "example": true,
}

// urlPassword reports whether the password of a URL is worth hiding: anything but a
// stand-in (empty, a template, a variable, a placeholder word) or a short plain word
// (user:pass@, gopher:go@, a "p@ssword" spelled differently in a parser test).
func urlPassword(pw []byte) bool {
	if len(pw) == 0 || pw[0] == '{' || pw[0] == '<' {
		return false
	}
	dec := percentDecode(pw)
	if placeholderLike(dec) || metasyntactic[strings.ToLower(string(dec))] {
		return false
	}
	var alnum, digits int
	for _, c := range dec {
		if isAlnum(c) {
			alnum++
		}
		if '0' <= c && c <= '9' {
			digits++
		}
	}
	if alnum < 4 {
		return false
	}
	return digits > 0 || len(dec) >= 16
}

// percentDecode undoes %XX escapes (leaving malformed ones as they are).
func percentDecode(b []byte) []byte {
	if bytes.IndexByte(b, '%') < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
			continue
		}
		out = append(out, b[i])
	}
	return out
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
