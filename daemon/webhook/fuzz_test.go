package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/daemon/webhook"
)

func hmacOf(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// FuzzGitHub: Verify never panics; the body's own signature verifies, and
// a header that is not exactly it is refused.
func FuzzGitHub(f *testing.F) {
	for _, v := range loadVectors(f).GitHub {
		f.Add([]byte(v.Secret), []byte(v.Body), v.Signature)
	}
	f.Add([]byte{}, []byte{}, "")
	f.Add([]byte("k"), []byte("{}"), "sha256=")
	f.Fuzz(func(t *testing.T, secret, body []byte, header string) {
		g := webhook.GitHub{Secret: secret}
		right := "sha256=" + hex.EncodeToString(hmacOf(secret, string(body)))
		_, err := g.Verify(githubHeader(header, "id"), body, time.Time{})
		if ok := len(secret) > 0 && header == right; ok != (err == nil) {
			t.Fatalf("header %q (right %q): %v", header, right, err)
		}
		if len(secret) > 0 {
			if _, err := g.Verify(githubHeader(right, "id"), body, time.Time{}); err != nil {
				t.Fatalf("its own signature refused: %v", err)
			}
		}
	})
}

// FuzzStandard: Verify never panics; a delivery signed for its id,
// timestamp and body verifies within the window, and one whose signature
// header holds no right v1 entry is refused.
func FuzzStandard(f *testing.F) {
	for _, v := range loadVectors(f).Standard {
		key, _ := webhook.DecodeStandardSecret(v.Secret)
		f.Add(key, v.ID, v.Timestamp, []byte(v.Body), v.Signature, int64(0))
	}
	f.Add([]byte("k"), "id", int64(0), []byte{}, "v1,", int64(-1<<40))
	f.Fuzz(func(t *testing.T, key []byte, id string, ts int64, body []byte, header string, skew int64) {
		s := webhook.Standard{Secret: key, Window: 5 * time.Minute}
		ts %= 1 << 40 // dates time.Time keeps without overflow
		now := time.Unix(ts, 0).Add(time.Duration(skew%600) * time.Second)
		right := base64.StdEncoding.EncodeToString(hmacOf(key, id+"."+strconv.FormatInt(ts, 10)+"."+string(body)))
		signed := len(key) > 0 && id != "" && strings.Contains(" "+header+" ", " v1,"+right+" ")
		h := standardHeader(id, ts, header)
		d, err := s.Verify(h, body, now)
		if err == nil && (!signed || d.ID != id || d.Timestamp.Unix() != ts) {
			t.Fatalf("accepted %+v for header %q (right v1,%s)", d, header, right)
		}
		if len(key) == 0 || id == "" || header == "" {
			return
		}
		_, err = s.Verify(standardHeader(id, ts, header+" v1,"+right), body, now)
		inWindow := skew%600 >= -300 && skew%600 <= 300
		fitID := len(id) <= webhook.MaxHeaderValue && !strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r > '~' })
		if want := inWindow && fitID; want != (err == nil) {
			t.Fatalf("its own signature (skew %ds, id %q): %v", skew%600, id, err)
		}
	})
}
