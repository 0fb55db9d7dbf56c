package envallow

import "testing"

func TestPass(t *testing.T) {
	cases := []struct {
		name, value string
		extra       []string
		want        bool
	}{
		{"PATH", "/usr/local/bin:/usr/bin:/bin", nil, true},
		{"LANG", "en_US.UTF-8", nil, true},
		{"LC_ALL", "C", nil, true},
		{"LC_", "x", nil, false},
		{"TERM", "xterm-256color", nil, true},
		{"HOME", "/home/u", nil, false}, // set by the daemon, not the caller
		{"GOFLAGS", "-mod=mod", nil, false},
		{"GOFLAGS", "-mod=mod", []string{"GOFLAGS"}, true},
		// Allowlisted by config, but a credential by name or value: never passed.
		{"GITHUB_TOKEN", "abc", []string{"GITHUB_TOKEN"}, false},
		{"DB_PASSWORD", "hunter2", []string{"DB_PASSWORD"}, false},
		{"AWS_SECRET_ACCESS_KEY", "x", []string{"AWS_SECRET_ACCESS_KEY"}, false},
		{"NPM_CONFIG_AUTH", "x", []string{"NPM_CONFIG_AUTH"}, false},
		{"MY_SETTING", "ghp_0123456789abcdefghijklmnopqrstuvwxyz", []string{"MY_SETTING"}, false},
		{"MY_SETTING", "sk-ant-api03-abcdefghijklmnop", []string{"MY_SETTING"}, false},
		{"MY_SETTING", "AKIAIOSFODNN7EXAMPLE", []string{"MY_SETTING"}, false},
		{"DATABASE_URL", "postgres://app:s3cr3t@db:5432/app", []string{"DATABASE_URL"}, false},
		{"MY_SETTING", "Zx8Kq2Lm9Pw4Rt7Yv1Nb6Hc3Jd5Fg0Sa", []string{"MY_SETTING"}, false}, // high entropy
		{"MY_SETTING", "Bearer abcdefghijklmnop", []string{"MY_SETTING"}, false},
		{"MY_SETTING", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", []string{"MY_SETTING"}, false},
		{"MY_SETTING", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", []string{"MY_SETTING"}, false},
		{"PROXY_LIST", "http://a.example/ https://u:p@b.example/", []string{"PROXY_LIST"}, false},
		// Ordinary values stay.
		{"GIT_URL", "https://git@github.com/x/y", []string{"GIT_URL"}, true},
		{"MY_SETTING", "skip-tests", []string{"MY_SETTING"}, true},
		{"KEYBOARD_LAYOUT", "us", []string{"KEYBOARD_LAYOUT"}, true},
		{"GOPATH", "/home/u/go", []string{"GOPATH"}, true},
		{"EDITOR_THEME", "solarized-dark", []string{"EDITOR_THEME"}, true},
		{"PATH", "/opt/a/very/long/path/with/many/components/bin:/usr/bin", nil, true},
	}
	for _, c := range cases {
		if got := Pass(c.name, c.value, c.extra); got != c.want {
			t.Errorf("Pass(%s=%q, extra %v) = %v, want %v", c.name, c.value, c.extra, got, c.want)
		}
	}
}
