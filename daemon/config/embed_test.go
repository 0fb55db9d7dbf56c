package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

func TestEmbedDefaults(t *testing.T) {
	s := config.Default().Store
	if s.EmbedAPI != config.EmbedNone || s.EmbedURL != "" || s.EmbedModel != "" || s.EmbedAPIKeyEnv != "" {
		t.Errorf("an embedding endpoint is configured by default: %+v", s)
	}
	if s.EmbedTimeout.Duration != 5*time.Second {
		t.Errorf("embed_timeout default %s, want 5s", s.EmbedTimeout)
	}
}

func TestEmbedValidation(t *testing.T) {
	tests := []struct {
		name, toml string
		err        string // "" = valid
	}{
		{"ollama, default URL", `embed_api = "ollama"` + "\n" + `embed_model = "nomic-embed-text"`, ""},
		{"ollama on another host", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "http://gpu:11434"`, ""},
		{"openai", `embed_api = "openai"` + "\n" + `embed_model = "text-embedding-3-small"` + "\n" + `embed_url = "https://api.openai.com/v1"` + "\n" + `embed_api_key_env = "OPENAI_API_KEY"`, ""},
		{"key to localhost over http", `embed_api = "openai"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "http://127.0.0.1:8080/v1"` + "\n" + `embed_api_key_env = "K"`, ""},
		{"timeout", `embed_timeout = "30s"`, ""},
		{"unknown API", `embed_api = "cohere"`, `store.embed_api = "cohere"`},
		{"URL without API", `embed_url = "http://localhost:11434"`, "store.embed_url is set but store.embed_api is empty"},
		{"model without API", `embed_model = "m"`, "store.embed_model is set but store.embed_api is empty"},
		{"no model", `embed_api = "ollama"`, "store.embed_model is required"},
		{"openai without URL", `embed_api = "openai"` + "\n" + `embed_model = "m"`, "store.embed_url is required"},
		{"not http", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "unix:///run/ollama.sock"`, "must start with http:// or https://"},
		{"no host", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "http:///api"`, "has no host"},
		{"credentials in URL", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "https://me:hunter2@host"`, "must not hold credentials"},
		{"query", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "http://h/?key=x"`, "query or fragment"},
		{"key value instead of a name", `embed_api = "ollama"` + "\n" + `embed_model = "m"` + "\n" + `embed_api_key_env = "sk-abc123-def"`, "not the key itself"},
		{"key over http to another host", `embed_api = "openai"` + "\n" + `embed_model = "m"` + "\n" + `embed_url = "http://gpu:8080/v1"` + "\n" + `embed_api_key_env = "K"`, "only sent over https"},
		{"zero timeout", `embed_timeout = "0s"`, "store.embed_timeout = 0s"},
		{"long timeout", `embed_timeout = "5m"`, "at most 1m0s"},
	}
	for _, tt := range tests {
		_, err := config.Parse([]byte("[store]\n" + tt.toml + "\n"))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (!errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %v; want %s saying %q", tt.name, err, catalog.ErrConfig.Code, tt.err)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
		if err != nil && strings.Contains(err.Error(), "sk-abc123") {
			t.Errorf("%s: the error shows what may be the key: %v", tt.name, err)
		}
	}
}
