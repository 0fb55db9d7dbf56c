package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// envName is what a variable named by a *_env key must look like: a shell
// variable name, so that a value pasted there by mistake (a key itself) is
// refused instead of looked up.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateEmbed checks the embed_* keys of [store]. The endpoint itself is
// not contacted: loading a configuration makes no network call.
func (s *Store) validateEmbed() error {
	switch s.EmbedAPI {
	case EmbedNone:
		// A URL or a model without a protocol is a half-made setting, not
		// a choice of lexical search: say so instead of ignoring it.
		// In file order, so that the key named is the same every time.
		for _, kv := range [][2]string{{"embed_url", s.EmbedURL}, {"embed_model", s.EmbedModel}, {"embed_api_key_env", s.EmbedAPIKeyEnv}} {
			if kv[1] != "" {
				return fmt.Errorf("store.%s is set but store.embed_api is empty: set embed_api = \"ollama\" or \"openai\", or remove %s", kv[0], kv[0])
			}
		}
	case EmbedOllama, EmbedOpenAI:
	default:
		return fmt.Errorf("store.embed_api = %q: must be \"ollama\", \"openai\" or \"\" (none)", s.EmbedAPI)
	}
	if t := s.EmbedTimeout.Duration; t <= 0 || t > MaxEmbedTimeout {
		return fmt.Errorf("store.embed_timeout = %s: must be positive and at most %s", s.EmbedTimeout, MaxEmbedTimeout)
	}
	if s.EmbedAPI == EmbedNone {
		return nil
	}
	if strings.TrimSpace(s.EmbedModel) == "" {
		return fmt.Errorf("store.embed_model is required with embed_api = %q (for example \"nomic-embed-text\" for Ollama, \"text-embedding-3-small\" for OpenAI)", s.EmbedAPI)
	}
	if s.EmbedAPIKeyEnv != "" && !envName.MatchString(s.EmbedAPIKeyEnv) {
		// Do not echo the value: it may be the key itself.
		return fmt.Errorf("store.embed_api_key_env must be the name of an environment variable (letters, digits, _), not the key itself")
	}
	if s.EmbedURL == "" {
		if s.EmbedAPI == EmbedOpenAI {
			return fmt.Errorf("store.embed_url is required with embed_api = \"openai\" (for example \"https://api.openai.com/v1\" or a local server's \"http://localhost:8080/v1\")")
		}
		return nil
	}
	u, err := url.Parse(s.EmbedURL)
	if err != nil {
		return fmt.Errorf("store.embed_url is not a URL: %v", err)
	}
	if u.User != nil {
		return fmt.Errorf("store.embed_url must not hold credentials: put the key in the variable store.embed_api_key_env names")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("store.embed_url = %q: must start with http:// or https://", u.Redacted())
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("store.embed_url = %q: has no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("store.embed_url = %q: must not have a query or fragment", u.Redacted())
	}
	// A key sent in clear text over a network can be read on the way; over
	// the loopback interface it cannot.
	if s.EmbedAPIKeyEnv != "" && u.Scheme == "http" && !loopback(u.Hostname()) {
		return fmt.Errorf("store.embed_url = %q: an API key (embed_api_key_env) is only sent over https, or over http to this machine (localhost)", u.Redacted())
	}
	return nil
}

// loopback reports whether host names this machine without leaving it.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
