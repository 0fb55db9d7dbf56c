package registries

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

var mavenCentral = []string{"repo.maven.apache.org", "repo1.maven.org"}

// mavenRepo is a mirror or repository of settings.xml.
type mavenRepo struct {
	id, url, mirrorOf string
	mirror            bool
}

// mavenServer is a <server>: its id ties it to a mirror or repository.
type mavenServer struct {
	id       string
	password string // the <password> element as written, tags and all
	headers  []mavenHeader
	hasPass  bool
}

// mavenHeader is a header property of a server's configuration
// (<httpHeaders><property><name>Private-Token</name><value>...</value>).
type mavenHeader struct {
	name  string
	value string // trimmed text, as written
}

type mavenSettings struct {
	repos   []mavenRepo
	servers []mavenServer
}

// parseSettings reads Maven's settings.xml. Element paths are matched by
// local name, as Maven ignores the namespace. A <password> is kept as the
// exact bytes of its element, for homeview.Redact to cut its value as the
// scrubbed copy does.
func parseSettings(b []byte) (*mavenSettings, int, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var s mavenSettings
	var path []string
	var text strings.Builder
	var start int64
	var repo *mavenRepo
	var srv *mavenServer
	var hdr *mavenHeader
	for {
		off := d.InputOffset()
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return &s, 0, nil
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				return nil, se.Line, err
			}
			return nil, 0, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
			start = off
			switch p := strings.Join(path, "/"); p {
			case "settings/mirrors/mirror":
				s.repos = append(s.repos, mavenRepo{mirror: true})
				repo = &s.repos[len(s.repos)-1]
			case "settings/profiles/profile/repositories/repository", "settings/profiles/profile/pluginRepositories/pluginRepository":
				s.repos = append(s.repos, mavenRepo{})
				repo = &s.repos[len(s.repos)-1]
			case "settings/servers/server":
				s.servers = append(s.servers, mavenServer{})
				srv = &s.servers[len(s.servers)-1]
			case "settings/servers/server/configuration/httpHeaders/property":
				if srv != nil {
					srv.headers = append(srv.headers, mavenHeader{})
					hdr = &srv.headers[len(srv.headers)-1]
				}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			p := strings.Join(path, "/")
			v := strings.TrimSpace(text.String())
			switch {
			case repo != nil && strings.HasSuffix(p, "/id") && len(path) >= 2 && isRepoElem(path[len(path)-2]):
				repo.id = v
			case repo != nil && strings.HasSuffix(p, "/url") && len(path) >= 2 && isRepoElem(path[len(path)-2]):
				repo.url = v
			case repo != nil && p == "settings/mirrors/mirror/mirrorOf":
				repo.mirrorOf = v
			case srv != nil && p == "settings/servers/server/id":
				srv.id = v
			case srv != nil && p == "settings/servers/server/password":
				srv.password = string(b[start:d.InputOffset()])
				srv.hasPass = v != ""
			case hdr != nil && p == "settings/servers/server/configuration/httpHeaders/property/name":
				hdr.name = v
			case hdr != nil && p == "settings/servers/server/configuration/httpHeaders/property/value":
				hdr.value = v
			}
			if isRepoElem(t.Name.Local) {
				repo = nil
			}
			switch t.Name.Local {
			case "server":
				srv = nil
			case "property":
				hdr = nil
			}
			path = path[:len(path)-1]
			text.Reset()
		}
	}
}

func isRepoElem(name string) bool {
	return name == "mirror" || name == "repository" || name == "pluginRepository"
}

// maven reads ~/.m2/settings.xml: mirrors and the repositories of its
// profiles, and the passwords of the servers whose ids match them.
func (c *collector) maven() {
	p := c.home(".m2/settings.xml")
	b, ok := c.read(p)
	if !ok {
		c.mavenDefault(nil)
		return
	}
	o := c.fileOrigin(p, true)
	s, line, err := parseSettings(b)
	if err != nil {
		c.note("%s: does not parse as XML (line %d); skipped", o.label, line)
		c.mavenDefault(nil)
		return
	}
	hosts := map[string][]hostURL{} // id -> where its server's credentials go
	for _, r := range s.repos {
		if r.url == "" {
			continue
		}
		kind := "repository"
		if r.mirror {
			kind = "mirror"
		}
		key := kind + "[id=" + r.id + "]/url"
		raw, ok := c.mavenInterpolate(r.url)
		if !ok {
			c.note("%s (%s): names a property that is not known here; no rule", key, o.label)
			continue
		}
		u, ok := c.url(raw, key, "maven "+kind+" "+r.id, o, true)
		if ok && !slices.Contains(hosts[r.id], u) {
			hosts[r.id] = append(hosts[r.id], u)
		}
	}
	c.mavenDefault(s.repos)
	for _, srv := range s.servers {
		key := "servers/server[id=" + srv.id + "]"
		var secrets []Secret
		if srv.hasPass {
			v, ok := redactedValue(srv.password)
			switch {
			case !ok:
				// A reference to the environment (${env.PW}), or written
				// as homeview's reading does not see it (CDATA).
				if !strings.HasPrefix(strings.TrimSpace(xmlText(srv.password)), "${") {
					c.note("%s/password (%s): not replaced in the scrubbed copy as written; no rule", key, o.label)
				}
			case strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}"):
				c.note("%s/password (%s): encrypted with Maven's master password, which Maven decrypts before it sends it; no rule", key, o.label)
			case refersToEnv(v):
				c.note("%s/password (%s): partly taken from properties; no rule", key, o.label)
			default:
				secrets = append(secrets, Secret{Value: v, File: o.file, Key: key + "/password"})
			}
		}
		for _, h := range srv.headers {
			// A header token (GitLab's Private-Token, Job-Token) is left
			// by homeview's key reading to the secret scanner, which sees
			// it as written.
			if h.value == "" || strings.HasPrefix(h.value, "${") {
				continue
			}
			secrets = append(secrets, Secret{Value: h.value, File: o.file, Key: key + "/configuration/httpHeaders/property[name=" + h.name + "]/value"})
		}
		if len(secrets) == 0 {
			continue
		}
		if len(hosts[srv.id]) == 0 {
			c.note("%s (%s): no mirror or repository in settings.xml has this id (a project's pom.xml may name it); no rule for its credentials", key, o.label)
			continue
		}
		for _, u := range hosts[srv.id] {
			for _, sec := range secrets {
				sec.Host, sec.Port = u.host, u.port
				c.addSecret(sec)
			}
		}
	}
}

// mavenDefault adds Maven Central unless a mirror stands in for it.
func (c *collector) mavenDefault(repos []mavenRepo) {
	for _, r := range repos {
		if r.mirror && mirrorsCentral(r.mirrorOf) {
			return
		}
	}
	for _, h := range mavenCentral {
		c.addDefault(h, "maven default (Maven Central)")
	}
}

// mirrorsCentral reports whether a mirrorOf list covers central: "*",
// "external:*" (central is not on localhost or file:) or "central", and
// not "!central".
func mirrorsCentral(of string) bool {
	covered := false
	for _, e := range strings.Split(of, ",") {
		switch strings.TrimSpace(e) {
		case "!central":
			return false
		case "*", "external:*", "central":
			covered = true
		}
	}
	return covered
}

// mavenInterpolate fills in the properties Maven knows in settings.xml:
// ${env.NAME} and ${user.home}.
func (c *collector) mavenInterpolate(s string) (string, bool) {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return s, true
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return s, false
		}
		name := s[i+2 : i+j]
		var v string
		switch {
		case name == "user.home":
			v = c.h.Home
		case strings.HasPrefix(name, "env."):
			var set bool
			v, set = c.h.Env[strings.TrimPrefix(name, "env.")]
			if !set {
				return s, false
			}
		default:
			return s, false
		}
		s = s[:i] + v + s[i+j+1:]
	}
}

// xmlText is the text of an element as written, without its tags.
func xmlText(elem string) string {
	if i := strings.IndexByte(elem, '>'); i >= 0 {
		elem = elem[i+1:]
	}
	if i := strings.LastIndexByte(elem, '<'); i >= 0 {
		elem = elem[:i]
	}
	return elem
}

// gradle notes the credentials of gradle.properties: a build script names
// the repository each is for, so none can be tied to a host here.
func (c *collector) gradle() {
	p := filepath.Join(c.dirVar("GRADLE_USER_HOME", ".gradle"), "gradle.properties")
	b, ok := c.read(p)
	if !ok {
		return
	}
	var keys []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		i := strings.IndexAny(line, "=:")
		if _, ok := redactedValue(line); !ok || i < 0 {
			continue
		}
		k := strings.TrimSpace(line[:i])
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		c.note("%s: %s hold credentials for repositories that build scripts name; no rule ties them to a host", c.tilde(p), strings.Join(keys, ", "))
	}
}
