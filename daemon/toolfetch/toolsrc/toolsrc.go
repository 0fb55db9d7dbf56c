// Package toolsrc reads the SOURCE of `contextd tool install` (which getter fetches it, from where, at which ref and subdirectory, with what checksum) and holds the fetch's operation and report, so that the host and the sandboxed fetch share one reading.
package toolsrc

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	getter "github.com/hashicorp/go-getter/v2"

	"github.com/contextd/contextd/catalog"
)

// Kind is how a source is fetched.
type Kind string

// The kinds of source: go-getter's git and HTTP getters, and a path on this
// machine (a directory or an archive file), which is copied, never linked.
const (
	Git   Kind = "git"
	HTTP  Kind = "http"
	Local Kind = "file"
)

// Source is a parsed SOURCE.
type Source struct {
	Kind Kind
	// URL is what the getter is given: no subdirectory, no checksum, no
	// ref (Git), no forcing prefix. For Local it is the absolute path.
	URL string
	// Ref is a git source's ?ref=, checked by CheckRef; "" for the
	// remote's default branch.
	Ref string
	// Subdir is the //subdir, a clean relative path; "" for the root.
	Subdir string
	// Checksum is ?checksum=, "sha256:<hex>", "git:<commit>" or
	// "tree:<hex>", the value the fetch's Resolved must have.
	Checksum string
	// Host and Port are where a network source is fetched from: the one
	// place its sandbox may connect to.
	Host string
	Port int
}

// Pinned reports whether fetching s again must give what was fetched
// before: a git source at a ref (a tag or a commit) and an archive at a
// URL. A branch-less git source and a local path follow their content.
func (s *Source) Pinned() bool {
	return s.HTTPArchive() || (s.Kind == Git && s.Ref != "")
}

// HTTPArchive reports whether s is an archive served over HTTP.
func (s *Source) HTTPArchive() bool { return s.Kind == HTTP }

// Locked is s as the lock records it: what `tool update` fetches again,
// without the checksum, which the lock keeps apart.
func (s *Source) Locked() string {
	out, query, _ := strings.Cut(s.URL, "?")
	if s.Kind == Git {
		out = "git::" + out
	}
	if s.Subdir != "" {
		out += "//" + s.Subdir
	}
	if s.Ref != "" {
		query = strings.TrimPrefix(query+"&ref="+s.Ref, "&")
	}
	if query != "" {
		out += "?" + query
	}
	return out
}

func bad(src, format string, args ...any) error {
	return fmt.Errorf("source %q: %s: %w", src, fmt.Sprintf(format, args...), catalog.ErrBadInput)
}

// maxSource bounds a SOURCE: it is shown to the user and passed to git.
const maxSource = 4096

// Parse reads a SOURCE. A relative local path is made absolute against
// cwd. Only the git, http(s) and local forms are accepted; any other
// getter go-getter knows (s3, gcs, hg, smb) and any parameter but ref and
// checksum (sshkey above all) are refused.
func Parse(src, cwd string) (*Source, error) {
	if src == "" || len(src) > maxSource || strings.ContainsAny(src, "\x00\r\n\t ") {
		return nil, bad(src, "empty, too long, or holding white space or control characters")
	}
	forced := ""
	rest := src
	if i := strings.Index(src, "::"); i > 0 && !strings.Contains(src[:i], "/") {
		forced, rest = src[:i], src[i+2:]
		if forced != "git" {
			return nil, bad(src, "the %s:: getter is not supported (git::, https://, http://, file:// or a path)", forced)
		}
	}
	base, sub := getter.SourceDirSubdir(rest)
	s := &Source{}
	if sub != "" {
		clean, err := CheckSubdir(sub)
		if err != nil {
			return nil, fmt.Errorf("source %q: %w", src, err)
		}
		s.Subdir = clean
	}
	raw, query, _ := strings.Cut(base, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, bad(src, "its query: %v", err)
	}
	if v, ok := q["checksum"]; ok {
		if len(v) != 1 || CheckChecksum(v[0]) != nil {
			return nil, bad(src, "checksum= must be one of sha256:<64 hex>, git:<40 hex>, tree:<64 hex>")
		}
		s.Checksum = v[0]
		q.Del("checksum")
	}
	if _, ok := q["sshkey"]; ok {
		return nil, bad(src, "sshkey= is refused: a tool is fetched over https, http or from a local path, never with a key")
	}
	switch {
	case forced == "git" || strings.HasSuffix(strings.TrimSuffix(raw, "/"), ".git") && strings.Contains(raw, "://"):
		s.Kind = Git
	case strings.HasPrefix(raw, "http://"), strings.HasPrefix(raw, "https://"):
		s.Kind = HTTP
	case strings.HasPrefix(raw, "file://"), strings.HasPrefix(raw, "/"), strings.HasPrefix(raw, "./"), strings.HasPrefix(raw, "../"), raw == ".", raw == "..":
		s.Kind = Local
	case strings.Contains(raw, "://"):
		return nil, bad(src, "scheme %q is not supported (https://, http://, file://, or git:: before one of them)", raw[:strings.Index(raw, "://")])
	default:
		return nil, bad(src, "write a URL (https://..., git::https://...?ref=v1) or a path (/abs/dir, ./dir)")
	}
	if s.Kind == Git {
		if v, ok := q["ref"]; ok {
			if len(v) != 1 {
				return nil, bad(src, "ref= given twice")
			}
			if err := CheckRef(v[0]); err != nil {
				return nil, fmt.Errorf("source %q: %w", src, err)
			}
			s.Ref = v[0]
			q.Del("ref")
		}
		if len(q) > 0 {
			return nil, bad(src, "a git source takes ref= and checksum= only, not %s", firstKey(q))
		}
	} else {
		for _, k := range []string{"ref", "archive", "filename", "depth"} {
			if _, ok := q[k]; ok {
				return nil, bad(src, "%s= applies to git sources only, or changes how go-getter unpacks, which contextd does itself", k)
			}
		}
	}
	switch s.Kind {
	case Local:
		return s.local(src, raw, q, cwd)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad(src, "%v", err)
	}
	if u.User != nil {
		return nil, bad(src, "credentials in the URL are refused")
	}
	switch u.Scheme {
	case "https", "http":
	case "file":
		if s.Kind != Git {
			return nil, bad(src, "file:// without git:: is a local path")
		}
		if u.Host != "" || !path.IsAbs(u.Path) {
			return nil, bad(src, "file:// needs an absolute path (file:///dir)")
		}
		u.RawQuery = q.Encode()
		s.URL = u.String()
		return s, nil
	default:
		return nil, bad(src, "scheme %q is not supported", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, bad(src, "no host")
	}
	s.Host = strings.ToLower(u.Hostname())
	s.Port = 443
	if u.Scheme == "http" {
		s.Port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, bad(src, "port %q", p)
		}
		s.Port = n
	}
	u.RawQuery = q.Encode()
	u.Fragment = ""
	s.URL = u.String()
	return s, nil
}

func (s *Source) local(src, raw string, q url.Values, cwd string) (*Source, error) {
	if len(q) > 0 {
		return nil, bad(src, "a local path takes checksum= only, not %s", firstKey(q))
	}
	p := raw
	if strings.HasPrefix(raw, "file://") {
		u, err := url.Parse(raw)
		if err != nil || u.Host != "" || !path.IsAbs(u.Path) {
			return nil, bad(src, "file:// needs an absolute path (file:///dir)")
		}
		p = u.Path
	}
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(cwd) {
			return nil, bad(src, "a relative path needs the working directory")
		}
		p = filepath.Join(cwd, p)
	}
	s.URL = filepath.Clean(p)
	if s.URL == "/" || strings.ContainsAny(s.URL, ":?#") {
		return nil, bad(src, "the root directory, or a path with ':', '?' or '#', is not taken as a tool's source")
	}
	return s, nil
}

// LocalPath is the path on this machine a source reads, which its
// sandbox must show read-only: a local source's, or a git file:// URL's;
// "" for a network source.
func (s *Source) LocalPath() string {
	switch {
	case s.Kind == Local:
		return s.URL
	case s.Kind == Git && strings.HasPrefix(s.URL, "file://"):
		if u, err := url.Parse(s.URL); err == nil {
			return u.Path
		}
	}
	return ""
}

// Rule is the egress rule that lets a network source's sandbox reach its
// host, and nothing else; "" for a source on this machine.
func (s *Source) Rule() string {
	if s.Host == "" {
		return ""
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
}

func firstKey(q url.Values) string {
	for k := range q {
		return k + "="
	}
	return ""
}

var refRE = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,200}$`)

// CheckRef refuses a git ref that git could read as an option (go-getter
// passes it to `git checkout` with no "--" before it) or that holds
// anything but letters, digits and . _ / -.
func CheckRef(ref string) error {
	if !refRE.MatchString(ref) || strings.HasPrefix(ref, "-") || strings.Contains(ref, "..") {
		return fmt.Errorf("ref %q: use letters, digits, '.', '_', '/' and '-', not starting with '-' and without '..': %w", ref, catalog.ErrBadInput)
	}
	return nil
}

// CheckSubdir returns the //subdir as a clean relative path, refusing an
// absolute one or one with "..": go-getter's own subdir copy follows a link
// at its root (CVE-2025-8959), so contextd resolves the subdir itself and
// only beneath the fetched tree.
func CheckSubdir(sub string) (string, error) {
	sub = strings.Trim(sub, "/")
	if sub == "" {
		return "", nil
	}
	for _, e := range strings.Split(sub, "/") {
		if e == ".." || e == "" || strings.ContainsAny(e, "*?[\\") {
			return "", fmt.Errorf("subdir %q: a relative path inside the source, without '..', '//' or glob characters: %w", sub, catalog.ErrBadInput)
		}
	}
	return path.Clean(sub), nil
}

var checksumRE = regexp.MustCompile(`^(sha256:[0-9a-f]{64}|tree:[0-9a-f]{64}|git:[0-9a-f]{40}([0-9a-f]{24})?)$`)

// CheckChecksum checks the form of a pinned value: "sha256:<hex>" of an
// archive, "git:<commit>", or "tree:<hex>" of a local directory.
func CheckChecksum(sum string) error {
	if !checksumRE.MatchString(sum) {
		return fmt.Errorf("checksum %q: write sha256:<64 hex>, git:<commit> or tree:<64 hex> (as `contextd tool list` shows it): %w", sum, catalog.ErrBadInput)
	}
	return nil
}
