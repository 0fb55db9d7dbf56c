package scrub

import (
	mrand "math/rand"
	"strings"
	"testing"
)

// ownFindings returns the findings of contextd's own rules, as "rule=secret".
func ownFindings(s *Scrubber, text string) []string {
	var out []string
	for _, f := range s.Find([]byte(text)) {
		if f.Rule == RuleEnvCredential || f.Rule == RuleURLCredential {
			out = append(out, f.Rule+"="+f.Secret)
		}
	}
	return out
}

func TestEnvCredentialForms(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(11))}
	names := []string{"DB_PASSWORD", "PASSWORD", "PASSWD", "MY_SERVICE_TOKEN", "APP_SECRET", "SIGNING_KEY",
		"STRIPE_API_KEY", "AWS_SECRET_ACCESS_KEY", "JWT_PRIVATE_KEY", "CLIENT_SECRET", "db_pass", "redisPassword",
		"clientSecret", "webhook-secret", "smtp.password", "ADMIN_CREDENTIALS", "api_key"}
	forms := []struct{ name, format string }{
		{"shell", "%s=%s\n"},
		{"export quoted", "export %s=\"%s\"\n"},
		{"export single", "export %s='%s'\n"},
		{"yaml", "  %s: %s\n"},
		{"yaml quoted", "- %s: \"%s\"\n"},
		{"json", "{\"%s\": \"%s\", \"other\": 1}\n"},
		{"toml", "%s = '%s'\n"},
		{"ini", "%s = %s\n"},
		{"flag", "run --%s=%s --verbose\n"},
		{"inline env", "env %s=%s ./deploy.sh\n"},
		{"dockerfile", "ENV %s=%s\n"},
		{"compose list", "    environment:\n      - %s=%s\n"},
		{"kubernetes env", "        - name: %s\n          value: \"%s\"\n"},
	}
	for _, form := range forms {
		for _, name := range names {
			value := f.pick(alnum, 10) + f.digits(2) + f.pick(alnum+"-_", 10)
			text := "# config\n" + strings.Replace(strings.Replace(form.format, "%s", name, 1), "%s", value, 1)
			got := ownFindings(s, text)
			if len(got) != 1 || got[0] != RuleEnvCredential+"="+value {
				// gitleaks' generic rule may name it; what matters is that it is covered.
				if fs := s.Find([]byte(text)); len(fs) != 1 || !strings.Contains(fs[0].Secret, value) {
					t.Errorf("%s %s: %q: got %v / %+v", form.name, name, text, got, fs)
				}
			}
		}
	}
}

func TestEnvCredentialNegatives(t *testing.T) {
	s := newTestScrubber(t)
	for _, text := range []string{
		"DB_PASSWORD=${DB_PASSWORD}\n",
		"DB_PASSWORD=$DB_PASSWORD\n",
		"API_TOKEN=changeme\n",
		"API_TOKEN=<your-token-here>\n",
		"SECRET_KEY={{ .Values.secretKey }}\n",
		"PASSWORD=********\n",
		"PASSWORD=xxxxxxxxxxxx\n",
		"TOKEN_FILE=/run/secrets/token\n",
		"SSH_KEY=~/.ssh/id_ed25519\n",
		"TLS_KEY=./certs/server.key\n",
		"USE_TOKEN=true\n",
		"TOKEN_TTL=3600\n",
		"SESSION_KEY=1234567890123\n",
		"AUTH=required\n",
		"PUBLIC_KEY=MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n",
		"CACHE_KEY=user:1234:profile\n",
		"key: app.kubernetes.io/name\n",
		"secretName: my-app-tls\n",
		"password: production2024\n",
		"encryption_key = encryptionKey1024\n",
		"API_KEY=process.env.API_KEY\n",
		"token := tokens[i]\n",
		"\tPrivateKey: \"7d7dc5f71eb29ddaf80d6214632eeae03d9058af1fb6d22ed80badb62bc1a534\",\n",
		"const hexTestKey = \"3081a40201010430bdb9839c08ee793d1157886a7a758a3c8b2a17a4df48f17a\"\n",
		"password = newPassword\n",
		"GITHUB_TOKEN=[REDACTED:github-pat:1]\n",
		"DB_PASSWORD=\n",
		"log: password policy updated for user=alice\n",
	} {
		if got := ownFindings(s, text); len(got) != 0 {
			t.Errorf("%q: %v", text, got)
		}
	}
}

func TestURLCredential(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(12))}
	for _, tmpl := range []string{
		"postgres://app:%s@db.internal:5432/prod",
		"mysql://root:%s@127.0.0.1/test",
		"redis://:%s@cache:6379/0",
		"amqp://guest:%s@rabbit/",
		"https://deploy:%s@git.example.org/acme/app.git",
		"mongodb+srv://admin:%s@cluster0.mongodb.net/?retryWrites=true",
		"url = \"ftp://user:%s@files.example.com/in\"",
	} {
		pw := f.pick(alnum, 8) + f.digits(2) + f.pick("!*#?", 1) + f.pick(alnum, 3)
		text := strings.Replace(tmpl, "%s", pw, 1) + "\n"
		got := ownFindings(s, text)
		if len(got) != 1 || got[0] != RuleURLCredential+"="+pw {
			t.Errorf("%q: got %v, want the password %q", text, got, pw)
		}
	}
	for _, text := range []string{
		"https://github.com/acme/app",
		"https://user@github.com/acme/app",
		"ssh://git@github.com/acme/app.git",
		"https://user:@host/",
		"postgres://user:password@localhost/db",
		"postgres://user:${DB_PASSWORD}@localhost/db",
		"postgres://user:$PASSWORD@localhost/db",
		"postgres://user:<password>@localhost/db",
		"postgres://user:****@localhost/db",
		"http://foo:bar@bar.com",
		"http://gopher:go@test.com",
		"mailto:alice@example.com",
		"http://example.com/?email=a@b.com",
		"https://x:[REDACTED:contextd-url-credential:1]@host",
	} {
		if got := ownFindings(s, text+"\n"); len(got) != 0 {
			t.Errorf("%q: %v", text, got)
		}
	}
}

func TestCredentialName(t *testing.T) {
	for name, want := range map[string]bool{
		"PASSWORD": true, "DB_PASS": true, "GITHUB_TOKEN": true, "clientSecret": true, "x-api-key": true,
		"AWS_SECRET_ACCESS_KEY": true, "HMACKey": true, "authToken": true, "smtp.password": true,
		"KEY": false, "PRIMARY_KEY": false, "PUBLIC_KEY": false, "TOKEN_URL": false, "SECRET_NAME": false,
		"monkey": false, "bypass": false, "PASSWORD_FILE": false, "cacheKey": false, "sortKey": false,
	} {
		if got := credentialName([]byte(name)); got != want {
			t.Errorf("credentialName(%q) = %v", name, got)
		}
	}
}

func TestLooksRandom(t *testing.T) {
	f := fakes{mrand.New(mrand.NewSource(13))}
	for i := 0; i < 200; i++ {
		for _, v := range []string{
			f.pick(alnum, 24),
			f.pick("0123456789abcdef", 40),
			f.pick(base32U, 20),
			f.pick(alnum+"+/", 40),
			f.pick(alnum+"!@#$%^&*", 16),
		} {
			if !looksRandom([]byte(v)) {
				t.Errorf("looksRandom(%q) = false", v)
			}
		}
	}
	for _, v := range []string{"password", "hunter2", "production2024", "encryptionKey1024", "my-app-secret",
		"AbstractFactoryBean", "1234567890", "v1.2.3-rc1", "2025-03-01T08:00:00Z", "/etc/ssl/key.pem",
		"changeme123", "true", "${TOKEN}", "s3cr3t", "user@example.com"} {
		if looksRandom([]byte(v)) {
			t.Errorf("looksRandom(%q) = true", v)
		}
	}
}

func TestKubernetesEnvValue(t *testing.T) {
	s := newTestScrubber(t)
	text := "env:\n  - name: LOG_LEVEL\n    value: debug\n  - name: DB_PASSWORD\n    value: \"q8Vd2kLx7PzR4mWt\"\n  - name: \"API_TOKEN\"\n    value: Zr5tYq1Lm8Nw3Kp6Hs0Vb\n"
	got := ownFindings(s, text)
	want := []string{RuleEnvCredential + "=q8Vd2kLx7PzR4mWt", RuleEnvCredential + "=Zr5tYq1Lm8Nw3Kp6Hs0Vb"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
}
