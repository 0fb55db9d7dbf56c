package toolsearch

import "strings"

// concept is one operation or thing that agents and tool authors name with
// different words. A word or phrase of a query and of a tool yields the
// concept's id, and a shared id scores as half a shared word.
type concept struct {
	id    string
	words []string
}

// concepts is the reviewed vocabulary. Rules: generic words only, never a
// tool's name and never an entry for one query (TestConceptsHoldNoToolNames);
// a phrase is matched after stopwords are dropped, so "file a bug" is
// written "file bug".
var concepts = []concept{
	// Verbs.

	// Making something that was not there: "file a bug" and "open a PR"
	// create them; "spin up" a cluster object.
	{"create", []string{"create", "add", "new", "make", "register", "spin up", "file bug", "file issue", "file ticket", "open pr", "open issue", "open pull request", "open merge request", "start new", "cut"}},
	// Reading one thing whole.
	{"read", []string{"read", "get", "show", "view", "fetch", "see", "look at", "cat", "check", "retrieve", "print", "pull up", "display", "contents", "what written"}},
	// Enumerating many things.
	{"list", []string{"list", "all", "enumerate", "which", "every", "browse", "index"}},
	// Changing what is there.
	{"update", []string{"update", "edit", "change", "modify", "set", "patch", "tweak", "replace", "fix", "amend", "close"}},
	// Making something go away.
	{"delete", []string{"delete", "remove", "drop", "kill", "destroy", "tear down", "rm", "get rid", "forget", "erase", "purge", "uninstall", "clean"}},
	// Finding by words or a pattern.
	{"search", []string{"search", "find", "look for", "grep", "locate", "lookup", "look up", "where", "mention"}},
	// Getting a change into the main line.
	{"merge", []string{"merge", "land", "ship", "squash", "integrate"}},
	// How many copies run.
	{"scale", []string{"scale", "bump", "resize", "replica", "instances", "scale up", "scale down"}},
	// What a program printed, and why it failed.
	{"logs", []string{"log", "logs", "crash", "crashing", "restarting", "failing", "stack trace", "output", "printed", "stdout", "stderr", "console", "error"}},
	// Running a command or code.
	{"run", []string{"run", "execute", "exec", "invoke", "evaluate", "eval", "shell", "command"}},
	// Saying something about someone's work.
	{"comment", []string{"comment", "reply", "respond", "answer", "review", "feedback", "remark"}},
	// Emoji reactions to a message.
	{"react", []string{"react", "reaction", "emoji", "thumbs up", "thumbsup", "like", "upvote"}},
	// Moving a browser to a place.
	{"navigate", []string{"navigate", "go to", "visit", "open url", "browse to", "load url", "head back", "go back", "url", "link"}},
	// Pointer and keyboard actions.
	{"click", []string{"click", "press", "tap", "hit", "button"}},
	{"type", []string{"type", "fill", "enter text", "input", "write into", "field", "form"}},
	// A picture of the screen.
	{"screenshot", []string{"screenshot", "capture", "image", "picture", "png", "snap"}},
	// Putting a thing elsewhere or under another name.
	{"move", []string{"move", "rename", "relocate", "mv"}},
	// Sending a local file to a remote.
	{"upload", []string{"upload", "attach"}},
	// Recording a change in version control.
	{"commit", []string{"commit", "push", "check in"}},
	// Saying something in chat.
	{"send", []string{"send", "post", "tell", "say", "announce", "notify", "let know"}},
	// Going back to an earlier version.
	{"rollback", []string{"rollback", "roll back", "undo", "revert", "rollout", "restart"}},
	// Remembering for later.
	{"remember", []string{"remember", "memorize", "note", "record", "store", "save", "keep"}},

	// Nouns.
	{"pr", []string{"pr", "pull request", "merge request", "mr", "change request", "patch set"}},
	{"issue", []string{"issue", "ticket", "bug", "task"}},
	{"repo", []string{"repo", "repository", "project", "codebase"}},
	{"kubernetes", []string{"k8s", "kubernetes", "kubectl", "cluster", "kube"}},
	{"pod", []string{"pod", "container", "workload"}},
	{"deployment", []string{"deployment", "deploy", "rollout", "release"}},
	{"namespace", []string{"namespace", "ns"}},
	{"message", []string{"message", "msg", "post", "chat", "text"}},
	{"channel", []string{"channel", "room"}},
	{"thread", []string{"thread", "replies", "conversation"}},
	{"page", []string{"page", "doc", "document", "wiki", "note"}},
	{"database", []string{"database", "db", "table", "sql", "postgres", "pg", "row", "column", "select"}},
	{"browser", []string{"browser", "tab", "website", "web page", "site"}},
	{"file", []string{"file", "path"}},
	{"directory", []string{"directory", "folder", "dir"}},
	{"memory", []string{"memory", "knowledge", "fact", "remember", "entity", "graph", "know"}},
	{"branch", []string{"branch", "ref"}},
	{"user", []string{"user", "member", "person", "people", "profile", "account", "who"}},

	// Server aliases: what agents call a server instead of its name.
	{"github", []string{"github", "gh"}},
	{"gitlab", []string{"gitlab", "gl"}},
	{"postgres", []string{"postgres", "pg", "psql", "postgresql"}},
	{"playwright", []string{"playwright", "browser"}},
	{"notion", []string{"notion", "workspace", "wiki"}},
}

// conceptIndex maps a stemmed word or phrase ("pull request" as "pull
// request") to its concept ids; maxPhrase is the longest phrase in words.
var conceptIndex, maxPhrase = buildConcepts()

func buildConcepts() (map[string][]string, int) {
	m := map[string][]string{}
	longest := 1
	for _, c := range concepts {
		for _, w := range c.words {
			ts := Tokens(w)
			if len(ts) == 0 {
				continue
			}
			key := strings.Join(ts, " ")
			m[key] = appendNew(m[key], "@"+c.id)
			longest = max(longest, len(ts))
		}
	}
	return m, longest
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// conceptsOf returns the concept ids of a token stream, with the token span
// that yielded each (for why).
func conceptsOf(toks []string) []span {
	var out []span
	for i := range toks {
		for n := 1; n <= maxPhrase && i+n <= len(toks); n++ {
			key := strings.Join(toks[i:i+n], " ")
			for _, id := range conceptIndex[key] {
				out = append(out, span{id: id, from: i, to: i + n})
			}
		}
	}
	return out
}

type span struct {
	id       string
	from, to int
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
