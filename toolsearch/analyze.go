package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// word is one word of a text as retrieval reads it.
type word struct {
	stem string // lowercase and stemmed
	text string // as written, for why
	// stop marks a stopword: it joins phrases ("go to", "what's in") but
	// is no term of its own.
	stop bool
	// weight is what a literal match of the word counts: 1, or less for
	// an argument (a number, a path's parts, a quoted string, the message
	// after "that" or "about"), which names a value rather than the task.
	weight float64
	// unit marks a word that says what the task is: coverage counts the
	// share of these a tool matches.
	unit bool
	// qualified marks a server-name word followed by "server" or "mcp",
	// so that an everyday word ("everything", "memory") names a server
	// only when the agent says it does.
	qualified bool
}

// isStop says whether w carries no intent of its own: a stopword or a lone
// letter (the s of "what's", the q of "Q3").
func isStop(w string) bool {
	if stopwords[w] {
		return true
	}
	rs := []rune(w)
	return len(rs) == 1 && unicode.IsLetter(rs[0])
}

// textWords reads a tool's text: every word counts in full.
func textWords(s string) []word {
	ws := Words(s)
	out := make([]word, 0, len(ws))
	for _, w := range ws {
		stop := isStop(w)
		out = append(out, word{stem: Stem(w), text: w, stop: stop, weight: 1, unit: !stop})
	}
	return out
}

// nonStop is the stems of ws without the stopwords.
func nonStop(ws []word) []string {
	var out []string
	for _, w := range ws {
		if !w.stop {
			out = append(out, w.stem)
		}
	}
	return out
}

const (
	argWeight    = 0.3 // a path's, URL's or quoted string's own words, a message
	numberWeight = 0.2 // 5 replicas, PR 42, port 8080
)

// contentMarkers start the message of a task ("file a bug about …", "tell
// them saying …"): what follows is the payload, not what to do.
var contentMarkers = set("about", "saying", "says", "said", "reads", "titled", "called", "named")

// qualifiers after a server-name word say it is meant as the server.
var qualifiers = set("server", "mcp", "tools", "tool")

// queryWords reads an agent's task. Beside the words, it turns the shapes
// agents write into the word they stand for: a URL is a "url", a path or
// file name a "file" (or a "directory" with a trailing slash), #name a
// "channel" and @name a "user"; the shapes' own words, numbers, quoted
// strings and the message after a content marker count as arguments.
func queryWords(q string) []word {
	var out []word
	quoted, content := false, false
	fields := strings.Fields(q)
	for fi, f := range fields {
		trimmed := strings.TrimRight(f, ",.;:!?)")
		opens := strings.HasPrefix(f, "\"") || strings.HasPrefix(f, "“")
		closes := (strings.HasSuffix(trimmed, "\"") || strings.HasSuffix(trimmed, "”")) &&
			(!opens || utf8.RuneCountInString(trimmed) > 1)
		if opens {
			quoted = true
		}
		arg := quoted || content
		if cue := shape(f); cue != "" {
			w := word{stem: Stem(cue), text: f, weight: 1, unit: !arg}
			if valueCues[cue] {
				w.weight, w.unit = cueWeight, false
			}
			out = append(out, w)
			arg = true
		}
		ident := identifier(f)
		arg = arg || ident
		for _, w := range identWords(f, ident) {
			x := word{stem: Stem(w.text), text: w.text, stop: isStop(w.text), weight: 1}
			switch {
			case x.stop:
			case allDigits(w.text) || w.code:
				x.weight = numberWeight
			case arg:
				x.weight = argWeight
			default:
				x.unit = true
			}
			if fi+1 < len(fields) && qualifiers[strings.ToLower(strings.Trim(fields[fi+1], ",.;:!?"))] {
				x.qualified = true
			}
			out = append(out, x)
			if contentMarkers[w.text] || (w.text == "that" && clauseFollows(fields[fi+1:])) {
				content = true
			}
		}
		if strings.HasSuffix(f, ":") && fi+1 < len(fields) {
			content = true
		}
		if closes {
			quoted = false
		}
	}
	return out
}

// clauseFollows says whether "that" starts a clause ("note that Alice owns
// billing") rather than points at a thing ("drop that link"): a clause has
// at least two words of content.
func clauseFollows(rest []string) bool {
	n := 0
	for _, f := range rest {
		for _, w := range Words(f) {
			if !isStop(w) {
				n++
			}
		}
	}
	return n >= 2
}

// valueCues are shapes that name a value the task works on (an issue's
// number, an e-mail address, a position, an emoji) more than what it
// does: they lean toward the tools that take one (cueWeight), without the
// weight of a word of the task.
var valueCues = set("issue", "email", "coordinates", "emoji")

const cueWeight = 0.5

// tlds end a host name rather than a file name.
var tlds = set("com", "org", "net", "io", "dev", "ai", "co", "gov", "edu")

// shape names what a field of a task stands for when its form says so.
func shape(f string) string {
	if e := strings.TrimRight(f, ",;!?.)"); len(e) > 2 && e[0] == ':' && e[len(e)-1] == ':' && isLetter(e[1]) {
		// :tada: is an emoji's short name.
		return "emoji"
	}
	f = strings.TrimRight(f, ",;:!?)'\"”")
	f = strings.TrimRight(f, ".")
	f = strings.TrimLeft(f, "('\"“")
	if len(f) < 2 {
		return ""
	}
	lower := strings.ToLower(f)
	switch {
	case strings.Contains(lower, "://") || strings.HasPrefix(lower, "www.") || hostPort(lower):
		return "url"
	case f[0] == '#' && isLetter(f[1]):
		return "channel"
	case f[0] == '@' && isLetter(f[1]):
		return "user"
	case issueRef(f):
		// #812, acme/api#77: an issue or pull request by its number.
		return "issue"
	case strings.Count(f, "@") == 1 && strings.Contains(f[strings.IndexByte(f, '@'):], ".") && f[0] != '@':
		return "email"
	case latLng(f):
		return "coordinates"
	}
	if !strings.ContainsFunc(f, unicode.IsLetter) || strings.ContainsAny(f, "@") {
		return ""
	}
	if i := strings.LastIndexByte(f, '.'); i >= 1 && i < len(f)-1 {
		ext := lower[i+1:]
		if len(ext) <= 5 && isLetter(ext[0]) && !strings.ContainsFunc(ext, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if tlds[ext] && !strings.Contains(f, "/") {
				return "url"
			}
			return "file"
		}
	}
	if strings.Count(f, "/") > 0 && len(strings.Trim(f, "/")) > 0 {
		if strings.HasSuffix(f, "/") {
			return "directory"
		}
		return "path"
	}
	return ""
}

// hostPort says whether f is an address without a scheme: localhost, or
// host:port (localhost:5173, 127.0.0.1:8080, api.internal:443).
func hostPort(f string) bool {
	f = strings.TrimSuffix(f, "/")
	if f == "localhost" || strings.HasPrefix(f, "localhost/") {
		return true
	}
	h, port, ok := strings.Cut(f, ":")
	if !ok || h == "" || !allDigits(port) || len(port) > 5 {
		return false
	}
	return h == "localhost" || strings.Contains(h, ".")
}

// issueRef says whether f is #NUMBER, or OWNER/REPO#NUMBER.
func issueRef(f string) bool {
	i := strings.LastIndexByte(f, '#')
	if i < 0 || i == len(f)-1 || !allDigits(f[i+1:]) {
		return false
	}
	return i == 0 || strings.Count(f[:i], "/") == 1
}

// latLng says whether f is a latitude and a longitude: 51.5007,-0.1246.
func latLng(f string) bool {
	a, b, ok := strings.Cut(f, ",")
	return ok && decimal(a) && decimal(b) && strings.Contains(a, ".") && strings.Contains(b, ".")
}

func decimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	i, f, _ := strings.Cut(s, ".")
	return allDigits(i) && (f == "" || allDigits(f))
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

func allDigits(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}

// identWord is a word of a field, and whether it is a piece of a code.
type identWord struct {
	text string
	code bool
}

// identWords is Words(f), each marked when ident and it stands in a code
// ("3NxQ2" of pi_3NxQ2): a code's letters are no words.
func identWords(f string, ident bool) []identWord {
	var out []identWord
	for _, part := range strings.FieldsFunc(f, notAlnum) {
		c := ident && isCode(part)
		for _, w := range Words(part) {
			out = append(out, identWord{w, c})
		}
	}
	return out
}

// identifier says whether a field of a task names one object by its id
// (cus_77, U024BE7LH, worker-3, 7f3a9c) rather than says what to do: it
// holds a code, or its words are joined to a number by _ or -. Its words
// are then arguments, and a code's pieces count as a number does, so that
// the letters of an id match nothing by chance.
func identifier(f string) bool {
	parts := strings.FieldsFunc(f, notAlnum)
	for _, p := range parts {
		if isCode(p) {
			return true
		}
	}
	if len(parts) >= 2 && strings.ContainsAny(f, "_-") {
		for _, p := range parts {
			if allDigits(p) {
				return true
			}
		}
	}
	return false
}

// isCode says whether p mixes letters and digits as ids do: starting with a
// digit, or switching between them more than once. A word of the concept
// table (k8s) is a word.
func isCode(p string) bool {
	letters, digits, switches := false, false, 0
	for i, r := range p {
		d := unicode.IsDigit(r)
		letters, digits = letters || !d, digits || d
		if i > 0 && d != unicode.IsDigit(rune(p[i-1])) {
			switches++
		}
	}
	if !letters || !digits || (switches < 2 && !unicode.IsDigit(rune(p[0]))) {
		return false
	}
	return len(vocab.byToken[strings.Join(nonStop(textWords(p)), " ")]) == 0
}

func notAlnum(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
