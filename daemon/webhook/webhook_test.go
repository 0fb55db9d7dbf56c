package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/catalog"
	"github.com/contextd/contextd/daemon/webhook"
)

// vectors are signatures made by the senders' own libraries
// (testdata/vectors.mjs says how).
type vectors struct {
	GitHub []struct {
		Secret, Body, Signature string
	}
	Standard []struct {
		Secret, ID, Body, Signature string
		Timestamp                   int64
	}
}

func loadVectors(t testing.TB) vectors {
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.GitHub) < 5 || len(v.Standard) < 6 {
		t.Fatalf("testdata/vectors.json holds %d and %d vectors", len(v.GitHub), len(v.Standard))
	}
	return v
}

func githubHeader(sig, id string) http.Header {
	h := http.Header{}
	h.Set("X-Hub-Signature-256", sig)
	h.Set("X-GitHub-Delivery", id)
	h.Set("X-GitHub-Event", "push")
	return h
}

func standardHeader(id string, ts int64, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return h
}

func standardOf(t testing.TB, secret string, window time.Duration) webhook.Standard {
	key, err := webhook.DecodeStandardSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	return webhook.Standard{Secret: key, Window: window}
}

func flip(s string, i int) string {
	b := []byte(s)
	b[i%len(b)] ^= 1 << (i % 7)
	return string(b)
}

func TestGitHubVectors(t *testing.T) {
	for i, v := range loadVectors(t).GitHub {
		g := webhook.GitHub{Secret: []byte(v.Secret)}
		d, err := g.Verify(githubHeader(v.Signature, "72d3162e-cc78-11e3-81ab-4c9367dc0958"), []byte(v.Body), time.Time{})
		if err != nil || d.ID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || d.Event != "push" {
			t.Errorf("vector %d: %+v, %v", i, d, err)
		}
		for _, bad := range []struct {
			what         string
			secret, body string
			sig          string
		}{
			{"body", v.Secret, flip(v.Body, 3*i+1), v.Signature},
			{"secret", flip(v.Secret, i), v.Body, v.Signature},
			{"signature", v.Secret, v.Body, flip(v.Signature, len("sha256=")+5*i)},
			{"upper-case signature", v.Secret, v.Body, "sha256=" + strings.ToUpper(strings.TrimPrefix(v.Signature, "sha256="))},
			{"sha1 prefix", v.Secret, v.Body, "sha1=" + strings.TrimPrefix(v.Signature, "sha256=")},
			{"no prefix", v.Secret, v.Body, strings.TrimPrefix(v.Signature, "sha256=")},
			{"empty secret", "", v.Body, v.Signature},
		} {
			g := webhook.GitHub{Secret: []byte(bad.secret)}
			if _, err := g.Verify(githubHeader(bad.sig, "id"), []byte(bad.body), time.Time{}); !errors.Is(err, catalog.ErrHookSignature) {
				t.Errorf("vector %d, flipped %s: %v; want %s", i, bad.what, err, catalog.ErrHookSignature.Code)
			}
		}
	}
}

// A signed GitHub delivery still needs an id to be recorded by, and both
// the id and the event must be fit for the record.
func TestGitHubHeaders(t *testing.T) {
	v := loadVectors(t).GitHub[0]
	g := webhook.GitHub{Secret: []byte(v.Secret)}
	for _, tc := range []struct {
		name, id, event string
		err             error
	}{
		{"ok", "abc", "", nil},
		{"no id", "", "push", catalog.ErrBadInput},
		{"space in id", "a b", "push", catalog.ErrBadInput},
		{"long id", strings.Repeat("a", webhook.MaxHeaderValue+1), "push", catalog.ErrBadInput},
		{"longest id", strings.Repeat("a", webhook.MaxHeaderValue), "push", nil},
		{"control in event", "abc", "pu\x01sh", catalog.ErrBadInput},
		{"non-ASCII event", "abc", "püsh", catalog.ErrBadInput},
	} {
		h := githubHeader(v.Signature, tc.id)
		h.Set("X-GitHub-Event", tc.event)
		d, err := g.Verify(h, []byte(v.Body), time.Time{})
		if !errors.Is(err, tc.err) || (err == nil && (d.ID != tc.id || d.Event != tc.event)) {
			t.Errorf("%s: %+v, %v; want %v", tc.name, d, err, tc.err)
		}
	}
}

func TestStandardVectors(t *testing.T) {
	for i, v := range loadVectors(t).Standard {
		s := standardOf(t, v.Secret, 5*time.Minute)
		now := time.Unix(v.Timestamp, 0)
		d, err := s.Verify(standardHeader(v.ID, v.Timestamp, v.Signature), []byte(v.Body), now)
		if err != nil || d.ID != v.ID || !d.Timestamp.Equal(now) || d.Event != "" {
			t.Errorf("vector %d: %+v, %v", i, d, err)
		}
		ts := strconv.FormatInt(v.Timestamp, 10)
		for _, bad := range []struct {
			what string
			h    http.Header
			body string
		}{
			{"id", standardHeader(flip(v.ID, i), v.Timestamp, v.Signature), v.Body},
			{"timestamp", standardHeader(v.ID, v.Timestamp^1, v.Signature), v.Body},
			{"signature", standardHeader(v.ID, v.Timestamp, flip(v.Signature, len("v1,")+7*i)), v.Body},
			{"version", standardHeader(v.ID, v.Timestamp, "v2,"+strings.TrimPrefix(v.Signature, "v1,")), v.Body},
			{"no id", standardHeader("", v.Timestamp, v.Signature), v.Body},
			{"no signature", standardHeader(v.ID, v.Timestamp, ""), v.Body},
			{"no timestamp", func() http.Header { h := standardHeader(v.ID, 0, v.Signature); h.Del("webhook-timestamp"); return h }(), v.Body},
			{"timestamp spelled otherwise", func() http.Header {
				h := standardHeader(v.ID, 0, v.Signature)
				h.Set("webhook-timestamp", "+"+ts)
				return h
			}(), v.Body},
		} {
			if len(v.Body) > 0 {
				// A flipped bit of the body, checked for each alteration.
				if _, err := s.Verify(standardHeader(v.ID, v.Timestamp, v.Signature), []byte(flip(v.Body, 11*i)), now); !errors.Is(err, catalog.ErrHookSignature) {
					t.Errorf("vector %d, flipped body: %v", i, err)
				}
			}
			if _, err := s.Verify(bad.h, []byte(bad.body), now); !errors.Is(err, catalog.ErrHookSignature) {
				t.Errorf("vector %d, altered %s: %v; want %s", i, bad.what, err, catalog.ErrHookSignature.Code)
			}
		}
	}
}

// Any one v1 entry of webhook-signature may match (a sender rotating its
// secret signs with both); entries of other versions are ignored.
func TestStandardSeveralSignatures(t *testing.T) {
	v := loadVectors(t).Standard[1]
	s := standardOf(t, v.Secret, time.Minute)
	now := time.Unix(v.Timestamp, 0)
	other := "v1,dGhpcyBpcyBub3QgdGhlIHNpZ25hdHVyZSBhdCBhbGwhIQ=="
	for _, header := range []string{
		other + " " + v.Signature,
		v.Signature + " " + other,
		"v2,abc " + v.Signature + " v1a,xyz",
		"v1, " + v.Signature,
	} {
		if _, err := s.Verify(standardHeader(v.ID, v.Timestamp, header), []byte(v.Body), now); err != nil {
			t.Errorf("%q: %v", header, err)
		}
	}
	for _, header := range []string{
		other,
		"v2," + strings.TrimPrefix(v.Signature, "v1,"),
		v.Signature + "=",
		"v1," + v.Signature,
		strings.ReplaceAll(v.Signature, ",", " "),
	} {
		if _, err := s.Verify(standardHeader(v.ID, v.Timestamp, header), []byte(v.Body), now); !errors.Is(err, catalog.ErrHookSignature) {
			t.Errorf("%q: %v", header, err)
		}
	}
}

// The timestamp is checked against the injected clock, as far either way:
// exactly the window is in, one second more is out.
func TestStandardWindow(t *testing.T) {
	v := loadVectors(t).Standard[0]
	s := standardOf(t, v.Secret, 5*time.Minute)
	signed := time.Unix(v.Timestamp, 0)
	for _, tc := range []struct {
		now time.Time
		err error
	}{
		{signed, nil},
		{signed.Add(5 * time.Minute), nil},
		{signed.Add(5*time.Minute + 999*time.Millisecond), nil},
		{signed.Add(5*time.Minute + time.Second), catalog.ErrHookTimestamp},
		{signed.Add(-5 * time.Minute), nil},
		{signed.Add(-5*time.Minute - time.Second), catalog.ErrHookTimestamp},
		{signed.Add(10 * time.Minute), catalog.ErrHookTimestamp},
		{signed.Add(-24 * time.Hour), catalog.ErrHookTimestamp},
		{time.Unix(1<<62, 0), catalog.ErrHookTimestamp},
		{time.Unix(-1<<62, 0), catalog.ErrHookTimestamp},
	} {
		_, err := s.Verify(standardHeader(v.ID, v.Timestamp, v.Signature), []byte(v.Body), tc.now)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("now %+ds: %v; want %v", tc.now.Unix()-v.Timestamp, err, tc.err)
		}
	}
}

func TestDecodeStandardSecret(t *testing.T) {
	for _, in := range []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if k, err := webhook.DecodeStandardSecret(in); err != nil || len(k) != 24 {
			t.Errorf("%q: %d bytes, %v", in, len(k), err)
		}
	}
	for _, in := range []string{"", "whsec_", "whsec_!!!", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS"} {
		if k, err := webhook.DecodeStandardSecret(in); err == nil {
			t.Errorf("%q accepted as %x", in, k)
		}
	}
}
