package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/config"
)

func TestCacheDefaults(t *testing.T) {
	c := config.Default().Cache
	if !c.Enabled || c.Path != "" || c.MaxSize != 2<<30 || c.MaxAge.Duration != 14*24*time.Hour {
		t.Errorf("[cache] defaults: %+v", c)
	}
}

func TestCacheValidation(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		want       config.Cache // when err is ""
		err        string       // a substring of the error
	}{
		{"all set", "[cache]\nenabled = false\npath = \"/var/tmp/layers\"\nmax_size = \"512MiB\"\nmax_age = \"72h\"",
			config.Cache{Path: "/var/tmp/layers", MaxSize: 512 << 20, MaxAge: config.Duration{72 * time.Hour}}, ""},
		{"smallest", "[cache]\nmax_size = \"16MiB\"\nmax_age = \"1h\"",
			config.Cache{Enabled: true, MaxSize: 16 << 20, MaxAge: config.Duration{time.Hour}}, ""},
		{"relative path", "[cache]\npath = \"layers\"", config.Cache{}, "cache.path"},
		{"root path", "[cache]\npath = \"/\"", config.Cache{}, "cache.path"},
		{"small size", "[cache]\nmax_size = \"1MiB\"", config.Cache{}, "cache.max_size"},
		{"bad size", "[cache]\nmax_size = \"lots\"", config.Cache{}, "max_size"},
		{"short age", "[cache]\nmax_age = \"10m\"", config.Cache{}, "cache.max_age"},
		{"days", "[cache]\nmax_age = \"14d\"", config.Cache{}, "max_age"},
		{"unknown key", "[cache]\nmax_bytes = 1", config.Cache{}, "cache.max_bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.toml))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.err == "" && c.Cache != tt.want:
				t.Errorf("[cache] = %+v, want %+v", c.Cache, tt.want)
			case tt.err != "" && (!errors.Is(err, catalog.ErrConfig) || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Parse = %v; want %s naming %q", err, catalog.ErrConfig.Code, tt.err)
			}
		})
	}
}
