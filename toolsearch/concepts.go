package toolsearch

import "strings"

// concept is one operation or thing that agents and tool authors name with
// different words. A word or phrase of a query and of a tool yields the
// concept's id, and a shared id scores as most of a shared word
// (conceptWeight; a phrase's as a whole word).
type concept struct {
	id    string
	words []string
}

// concepts is the reviewed vocabulary. Rules: generic words only, never a
// tool's name and never an entry for one query (TestConceptsHoldNoToolNames).
// A phrase without stopwords matches across them ("file bug" in "file a
// bug"); a phrase with stopwords ("what's in", "open an issue") matches
// only word for word. A word inside a phrase yields only the phrase's
// concepts, so a phrase that still means its noun lists that noun's
// concept too ("file bug" is in create and in issue). The empty id marks
// filler that yields nothing.
var concepts = append(append(actions, things...), filler)

// actions are what a task does. Tool authors pick among their words freely
// (add, create, new, post), so a shared action word says little more than
// the shared action.
var actions = []concept{
	// Making something that was not there: "file a bug" and "open a PR"
	// create them; "note that …" and "remember that …" record a fact.
	{"create", []string{"mkdir", "create", "add", "new", "make", "register", "spin up", "file bug", "file issue", "file ticket",
		"open an issue", "open a new issue", "open a pr", "open a new pr", "open a pull request", "open a merge request",
		"raise an issue", "start new", "cut", "insert", "note that", "remember that", "jot down", "keep in mind"}},
	// Reading one thing whole; "what's in X" and "show me X" are how
	// agents ask for it.
	{"read", []string{"read", "get", "show", "view", "fetch", "see", "look at", "cat", "check", "retrieve", "print", "pull up",
		"display", "contents", "dump", "grab", "what's in", "what is in", "show me", "give me", "tell me"}},
	// Enumerating many things.
	{"list", []string{"do i have", "have i got", "ls", "list", "all", "enumerate", "which", "every", "everything", "entire", "whole", "browse", "index", "what are"}},
	// Changing what is there.
	{"update", []string{"update", "edit", "change", "modify", "set", "patch", "tweak", "replace", "fix", "amend", "close",
		"rename", "retitle", "mark as"}},
	// Making something go away.
	{"delete", []string{"delete", "remove", "drop", "kill", "destroy", "tear down", "rm", "get rid", "forget", "erase", "purge",
		"uninstall", "clean", "no longer", "unlink"}},
	// Finding by words or a pattern; "what do you know about X" looks X up.
	{"search", []string{"search", "find", "look for", "grep", "locate", "lookup", "look up", "where", "mention", "filter",
		"matching", "know about", "anything about", "is there"}},
	// Getting a change into the main line.
	{"merge", []string{"merge", "land", "ship", "squash", "integrate"}},
	// How many copies run.
	{"scale", []string{"scale", "bump", "resize", "replica", "instances", "scale up", "scale down"}},
	// What a program printed, and why it failed.
	{"logs", []string{"log", "logs", "crash", "crashing", "restarting", "failing", "stack trace", "output", "printed", "stdout",
		"stderr", "console", "error", "exception", "throw", "threw", "thrown", "why"}},
	// Everything known about one object: what it is, its size, its
	// dates, its events.
	{"detail", []string{"describe", "details", "detail", "detailed", "info", "information", "metadata", "inspect", "stat",
		"size", "how big", "how large", "disk space", "last modified", "when was", "events", "why"}},
	// Running a command or code.
	{"run", []string{"run", "execute", "exec", "invoke", "evaluate", "eval", "shell", "command"}},
	// Saying something about someone's work.
	{"comment", []string{"comment", "reply", "respond", "answer", "feedback", "remark"}},
	// Judging a change.
	{"review", []string{"review", "approve", "lgtm", "request changes", "sign off", "looks good"}},
	// Emoji reactions to a message.
	{"react", []string{"react", "reaction", "emoji", "thumbs up", "thumbsup", "like", "upvote"}},
	// Moving a browser to a place.
	{"navigate", []string{"navigate", "go to", "visit", "open url", "browse to", "load url", "head to", "url"}},
	// Going back where one was.
	{"back", []string{"back", "previous", "go back", "head back"}},
	// Pointer and keyboard actions.
	{"click", []string{"click", "press", "tap", "hit", "button"}},
	{"key", []string{"key", "keyboard", "keystroke", "enter", "escape", "esc", "backspace", "shortcut", "hotkey", "arrow key"}},
	{"type", []string{"type", "fill", "enter text", "input", "write into", "field", "form"}},
	// A picture of the screen.
	{"screenshot", []string{"image of", "screenshot", "capture", "snap", "look like", "looks like"}},
	// Pictures and sound as files.
	{"image", []string{"image", "picture", "png", "jpg", "jpeg", "gif", "photo", "media", "audio"}},
	// Putting a thing elsewhere or under another name.
	{"move", []string{"move", "rename", "relocate", "mv"}},
	// Sending a local file to a remote.
	{"upload", []string{"upload", "attach"}},
	// Recording a change in version control.
	{"commit", []string{"commit", "push", "check in"}},
	// Writing a file's contents.
	{"write", []string{"write", "save", "overwrite", "store", "put"}},
	// Saying something in chat.
	{"send", []string{"send", "post", "tell", "say", "announce", "notify", "broadcast", "dm"}},
	// Going back to an earlier version.
	{"rollback", []string{"previous version", "prior version", "rollback", "roll back", "undo", "revert", "rollout", "restart"}},
	// Whether something answers at all.
	{"health", []string{"reachable", "alive", "responsive", "health", "healthy", "heartbeat", "liveness", "connectivity",
		"is up", "is down", "still up"}},
	// Bringing back what was paused or put away.
	{"resume", []string{"resume", "restore", "unpause", "wake", "reactivate", "bring back", "revive"}},
}

// filler is phrases that only look like they say something.
var filler = concept{"", []string{"at all", "so far", "right now", "for me", "bad request"}}

// things are what a task acts on, and the servers by their other names.
var things = []concept{{"pr", []string{"pr", "pull request", "merge request", "mr", "change request", "patch set"}},
	{"issue", []string{"issue", "ticket", "bug", "defect", "file bug", "file issue", "file ticket", "open an issue",
		"open a new issue", "raise an issue"}},
	{"repo", []string{"repo", "repository", "project", "codebase"}},
	{"kubernetes", []string{"k8s", "kubernetes", "kubectl", "cluster", "kube"}},
	{"pod", []string{"pod", "container", "workload"}},
	{"deployment", []string{"deployment", "deploy", "rollout", "release", "ship", "publish", "go live"}},
	{"namespace", []string{"namespace", "ns"}},
	{"message", []string{"message", "msg", "post", "chat", "text", "dm"}},
	{"channel", []string{"channel", "room"}},
	{"thread", []string{"thread", "replies", "conversation"}},
	{"page", []string{"page", "doc", "document", "wiki", "note"}},
	{"database", []string{"database", "db", "table", "sql", "postgres", "pg", "row", "column", "data source", "dataset"}},
	{"browser", []string{"headless", "browser", "tab", "website", "web page", "site"}},
	{"network", []string{"network", "xhr", "traffic", "http request", "api call", "ajax", "har"}},
	{"file", []string{"file", "path"}},
	{"directory", []string{"mkdir", "ls", "directory", "folder", "dir"}},
	// What an agent was told to keep: facts about people and things.
	{"memory", []string{"memory", "knowledge", "fact", "remember", "memorize", "recall", "record", "entity", "graph", "know",
		"observation", "note that", "remember that", "jot down", "keep in mind"}},
	{"relation", []string{"relation", "relationship", "link", "linked", "associate", "depends on"}},
	{"branch", []string{"branch", "ref"}},
	{"user", []string{"user", "member", "person", "people", "profile", "account", "who", "timezone", "time zone", "email",
		"display name", "avatar"}},

	// Servers by what agents call them instead of their names.
	{"github", []string{"github", "gh"}},
	{"gitlab", []string{"gitlab", "gl"}},
	{"postgres", []string{"postgres", "pg", "psql", "postgresql"}},
	{"playwright", []string{"playwright", "browser"}},
	{"notion", []string{"notion", "workspace", "wiki"}},
	{"filesystem", []string{"filesystem", "fs", "disk"}},

	// Domains of hosted services: how agents say what the service calls
	// otherwise.
	{"location", []string{"nearby", "near me", "walking distance", "around here", "coordinates", "coordinate", "latitude", "longitude", "lat", "lng", "geographic", "gps"}},
	{"elevation", []string{"elevation", "altitude", "above sea level", "sea level", "how high"}},
	{"balance", []string{"balance", "money", "funds", "cash"}},
	{"dispute", []string{"dispute", "chargeback", "contested"}},
	{"invoice", []string{"invoice", "bill", "billing", "receipt"}},
	{"subscription", []string{"subscription", "subscribe", "recurring", "monthly", "membership", "tier", "premium"}},
	{"product", []string{"product", "sku", "catalog", "catalogue", "sell", "offering", "goods"}},
	{"migration", []string{"migration", "migrate", "schema change", "ddl", "alter table"}},
	{"tree", []string{"tree", "nested", "recursive", "recursively", "hierarchy", "layout", "structure", "outline"}},
	{"documentation", []string{"documentation", "docs", "manual", "guide"}},
	// A place on a map one can go to.
	{"place", []string{"place", "places", "restaurant", "restaurants", "cafe", "shop", "venue", "hotel", "business", "businesses"}},
	// A box a page raises that blocks it until answered.
	{"dialog", []string{"dialog", "popup", "pop-up", "modal", "alert", "dismiss"}},
	// Money off a price.
	{"discount", []string{"discount", "coupon", "promo", "promotion", "promo code", "voucher"}},
	{"current", []string{"point at", "point to", "current", "currently", "switch"}},
}

// conceptIndex maps a phrase's stems joined by spaces to its concept ids:
// byToken holds phrases without stopwords, byWord those with.
type conceptIndex struct {
	byToken, byWord map[string][]string
	action          map[string]bool // ids of actions
	// tokenPrefix and wordPrefix hold the proper beginnings of phrases,
	// so that matching stops extending a run no phrase continues.
	tokenPrefix, wordPrefix map[string]bool
	maxToken                int
	maxWord                 int
}

var vocab = buildConcepts()

func buildConcepts() conceptIndex {
	ci := conceptIndex{byToken: map[string][]string{}, byWord: map[string][]string{}, action: map[string]bool{},
		tokenPrefix: map[string]bool{}, wordPrefix: map[string]bool{}, maxToken: 1, maxWord: 1}
	for _, c := range actions {
		ci.action["@"+c.id] = true
	}
	for _, c := range concepts {
		id := ""
		if c.id != "" {
			id = "@" + c.id
		}
		for _, w := range c.words {
			ws := textWords(w)
			if len(ws) == 0 {
				continue
			}
			stems := make([]string, len(ws))
			stop := false
			for i, x := range ws {
				stems[i] = x.stem
				stop = stop || x.stop
			}
			key := strings.Join(stems, " ")
			prefix := ci.tokenPrefix
			if stop {
				ci.byWord[key] = appendNew(ci.byWord[key], id)
				ci.maxWord = max(ci.maxWord, len(ws))
				prefix = ci.wordPrefix
			} else {
				ci.byToken[key] = appendNew(ci.byToken[key], id)
				ci.maxToken = max(ci.maxToken, len(ws))
			}
			for n := 1; n < len(stems); n++ {
				prefix[strings.Join(stems[:n], " ")] = true
			}
		}
	}
	return ci
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// span is a concept a run of words yields; from and to index the words.
type span struct {
	id       string
	from, to int
	phrase   bool // more than one word
}

// matchConcepts returns the concepts of ws, and which words stand inside a
// phrase: such a word yields only the phrase's concepts.
func matchConcepts(ws []word) ([]span, []bool) {
	var all []span
	var idx []int
	for i, w := range ws {
		if !w.stop {
			idx = append(idx, i)
		}
	}
	var key strings.Builder
	for i := range idx {
		key.Reset()
		for n := 1; n <= vocab.maxToken && i+n <= len(idx); n++ {
			if n > 1 {
				key.WriteByte(' ')
			}
			key.WriteString(ws[idx[i+n-1]].stem)
			k := key.String()
			for _, id := range vocab.byToken[k] {
				all = append(all, span{id: id, from: idx[i], to: idx[i+n-1] + 1, phrase: n > 1})
			}
			if !vocab.tokenPrefix[k] {
				break
			}
		}
	}
	for i := range ws {
		key.Reset()
		for n := 1; n <= vocab.maxWord && i+n <= len(ws); n++ {
			if n > 1 {
				key.WriteByte(' ')
			}
			key.WriteString(ws[i+n-1].stem)
			k := key.String()
			for _, id := range vocab.byWord[k] {
				all = append(all, span{id: id, from: i, to: i + n, phrase: n > 1})
			}
			if !vocab.wordPrefix[k] {
				break
			}
		}
	}
	inPhrase := make([]bool, len(ws))
	for _, sp := range all {
		if sp.phrase {
			for j := sp.from; j < sp.to; j++ {
				inPhrase[j] = true
			}
		}
	}
	out := all[:0]
	for _, sp := range all {
		if sp.id != "" && (sp.phrase || !inPhrase[sp.from]) {
			out = append(out, sp)
		}
	}
	return out, inPhrase
}

// ambiguousName says whether a server named w is also an everyday word of
// a task ("everything", "fetch"): a word of some concept but not of the
// concept named after it.
func ambiguousName(w string) bool {
	ids := vocab.byToken[w]
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		if id == "@"+w {
			return false
		}
	}
	return true
}

// Vocabulary lists every word and phrase of the concept table, for the
// checks that keep it generic.
func Vocabulary() []string {
	var out []string
	for _, c := range concepts {
		out = append(out, c.words...)
	}
	return out
}
