package toolmanifest

import (
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/bytesize"
)

// The patterns are compiled on first use: the proxy links this package
// (through the tool store) and starts on every tool call, most of which
// never read a manifest; compiled at init, the bounded repetitions cost it
// about half a millisecond each start.
var (
	// toolName is short and safe as a file name, a symlink and an MCP
	// tool's name alike.
	toolName      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`) })
	toolchainName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`) })
	envName       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })
)

// Bounds of the lists, so that a manifest stays something a person reads
// before saying yes.
const (
	maxArgs    = 64
	maxArgLen  = 4096
	maxListLen = 32
	maxPathLen = 1024
	maxRuleLen = 300
)

func checkName(s string) (string, error) {
	if s == "" {
		return "", bad("name", "missing; name the tool (lower-case letters, digits, - and _, starting with a letter)")
	}
	if !toolName().MatchString(s) {
		return "", bad("name", "%q is not a tool name: lower-case letters, digits, - and _, starting with a letter, at most 32", s)
	}
	return s, nil
}

// printable reports whether s is valid UTF-8 with no control characters.
func printable(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

// checkLine checks one line of text of at most max bytes.
func checkLine(key, s string, max int, required bool) (string, error) {
	if s == "" && required {
		return "", bad(key, "missing; write one line")
	}
	if !printable(s) {
		return "", bad(key, "write one line of text, without control characters")
	}
	if len(s) > max {
		return "", bad(key, "%d bytes; keep it to %d", len(s), max)
	}
	if strings.TrimSpace(s) != s {
		return "", bad(key, "%q has spaces at an end", s)
	}
	return s, nil
}

// checkRel checks a path relative to the tool's root and returns it
// clean; it may not leave the root, nor name the root itself.
func checkRel(key, p string) (string, error) {
	if len(p) > maxPathLen || !printable(p) {
		return "", bad(key, "%q is not a path: at most %d bytes, no control characters", p, maxPathLen)
	}
	c := path.Clean(p)
	if c == "." || !fs.ValidPath(c) || strings.Contains(c, `\`) {
		return "", bad(key, "%q is not a file inside the tool's directory; write a relative path with no .. that leaves it", p)
	}
	return c, nil
}

// checkList checks a list of at most maxListLen entries, each with one,
// which returns the entry's normal form; two equal forms are refused.
func checkList(key string, items []string, one func(string) (string, error)) ([]string, error) {
	if len(items) > maxListLen {
		return nil, bad(key, "%d entries; at most %d", len(items), maxListLen)
	}
	var out []string
	for _, it := range items {
		n, err := one(it)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, n) {
			return nil, bad(key, "%q is listed twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkHostPaths checks permissions.read_only: absolute host paths, made
// clean. The root itself is refused: it would show the whole home.
func checkHostPaths(ps []string) ([]string, error) {
	const key = "permissions.read_only"
	return checkList(key, ps, func(p string) (string, error) {
		if len(p) > maxPathLen || !printable(p) || !path.IsAbs(p) {
			return "", bad(key, "%q is not an absolute path; write one starting with /", p)
		}
		c := path.Clean(p)
		if c == "/" {
			return "", bad(key, "%q would show the whole file system; name the directories the tool reads", p)
		}
		return c, nil
	})
}

// checkEgress checks the shape of each rule, "HOST[:PORT] [METHOD,...]":
// one or two fields, printable, short. The rule syntax itself is the egress
// proxy's, which the caller applies.
func checkEgress(rules []string) ([]string, error) {
	const key = "permissions.egress"
	return checkList(key, rules, func(r string) (string, error) {
		f := strings.Fields(r)
		if len(f) == 0 || len(f) > 2 || len(r) > maxRuleLen || !printable(r) {
			return "", bad(key, "%q is not a rule; write \"HOST[:PORT] [METHOD,...]\", for example \"api.example.com:443 GET\"", r)
		}
		n := strings.Join(f, " ")
		if egressHost(n) == "" {
			return "", bad(key, "%q names no host", r)
		}
		return n, nil
	})
}

// egressHost is the host part of a rule, lower-case, without brackets or a
// trailing dot; "" when there is none.
func egressHost(rule string) string {
	hp, _, _ := strings.Cut(rule, " ")
	switch {
	case strings.HasPrefix(hp, "["):
		end := strings.IndexByte(hp, ']')
		if end < 0 {
			return ""
		}
		hp = hp[1:end]
	case strings.Count(hp, ":") == 1:
		hp, _, _ = strings.Cut(hp, ":")
	}
	return strings.TrimSuffix(strings.ToLower(hp), ".")
}

// checkArgv checks a command line: at least the program, no NUL.
func checkArgv(key string, argv []string) ([]string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, bad(key, "missing; write the command as a list, for example [\"bin/tool\", \"--serve\"]")
	}
	if len(argv) > maxArgs {
		return nil, bad(key, "%d arguments; at most %d", len(argv), maxArgs)
	}
	for _, a := range argv {
		if len(a) > maxArgLen || strings.ContainsRune(a, 0) || !utf8.ValidString(a) {
			return nil, bad(key, "an argument is not text of at most %d bytes without NUL", maxArgLen)
		}
	}
	return slices.Clone(argv), nil
}

// checkNames checks a list of names against re, refusing repeats.
func checkNames(key string, names []string, re *regexp.Regexp, what string) ([]string, error) {
	return checkList(key, names, func(n string) (string, error) {
		if !re.MatchString(n) {
			return "", bad(key, "%q is not %s", n, what)
		}
		return n, nil
	})
}

// parseMemory reads permissions.memory: bytes as an integer, or a string
// with a binary unit ("256MiB", "1G").
func parseMemory(v any) (uint64, error) {
	const key = "permissions.memory"
	var n uint64
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return 0, bad(key, "%d is negative", v)
		}
		n = uint64(v)
	case string:
		d, err := bytesize.Parse(v)
		if err != nil {
			return 0, bad(key, "%q is not a size between 16MiB and 64GiB (write \"256MiB\" or \"1GiB\")", v)
		}
		n = d
	default:
		return 0, bad(key, "write a size such as \"256MiB\", or a number of bytes")
	}
	if n < MinMemory || n > MaxMemory {
		return 0, bad(key, "%d bytes is not between 16MiB and 64GiB", n)
	}
	return n, nil
}

func parseTimeout(s string) (time.Duration, error) {
	const key = "permissions.timeout"
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad(key, "%q is not a duration (write \"30s\" or \"5m\")", s)
	}
	if d < MinTimeout || d > MaxTimeout {
		return 0, bad(key, "%s is not between %s and %s", d, MinTimeout, MaxTimeout)
	}
	return d, nil
}
