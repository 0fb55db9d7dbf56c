// Package webhook verifies signed webhook deliveries over their raw body: GitHub's X-Hub-Signature-256 and Standard Webhooks, each an HMAC-SHA256 compared in constant time.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/contextd/contextd/catalog"
)

// Delivery is what a verified delivery's headers say about it.
type Delivery struct {
	// ID is the sender's delivery id, the key replays are refused by.
	ID string
	// Event is GitHub's X-GitHub-Event; empty for Standard Webhooks, whose
	// event type is in the payload.
	Event string
	// Timestamp is when a Standard Webhooks sender signed the delivery;
	// zero for GitHub's.
	Timestamp time.Time
}

// Verifier checks one scheme's signature over the raw body. An error wraps
// catalog.ErrHookSignature (no valid signature), catalog.ErrHookTimestamp
// (signed, but outside the window) or catalog.ErrBadInput (signed, but a
// header the daemon keeps is malformed).
type Verifier interface {
	Verify(h http.Header, body []byte, now time.Time) (Delivery, error)
}

// MaxHeaderValue bounds the delivery id and the event name: they are kept
// in the delivery record and the audit log.
const MaxHeaderValue = 200

// GitHub verifies X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256
// of the body under the secret. The signature covers the body only, so the
// delivery id (X-GitHub-Delivery) can be changed by whoever holds a signed
// body; the replay record still refuses the same id twice.
type GitHub struct {
	Secret []byte
}

// Verify implements Verifier.
func (g GitHub) Verify(h http.Header, body []byte, now time.Time) (Delivery, error) {
	sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	if !ok {
		return Delivery{}, fmt.Errorf("no X-Hub-Signature-256: sha256=... header: %w", catalog.ErrHookSignature)
	}
	// Compared as text, as GitHub's own libraries do: the one lower-case
	// hex form, so that no other spelling of a signature is accepted.
	want := hex.EncodeToString(mac(g.Secret, body))
	if len(g.Secret) == 0 || !hmac.Equal([]byte(sig), []byte(want)) {
		return Delivery{}, fmt.Errorf("X-Hub-Signature-256 is not the body's under the automation's secret: %w", catalog.ErrHookSignature)
	}
	id, err := headerValue(h, "X-GitHub-Delivery", true)
	if err != nil {
		return Delivery{}, err
	}
	event, err := headerValue(h, "X-GitHub-Event", false)
	if err != nil {
		return Delivery{}, err
	}
	return Delivery{ID: id, Event: event}, nil
}

// Standard verifies Standard Webhooks: webhook-signature holds
// space-separated "v1,<base64 HMAC-SHA256>" of "id.timestamp.body"; any
// one matching verifies, other versions are ignored. The timestamp
// (Unix seconds) must be within Window of now, either way.
type Standard struct {
	// Secret is the key itself: DecodeStandardSecret reads the
	// "whsec_..." form senders show.
	Secret []byte
	Window time.Duration
}

// DecodeStandardSecret reads a Standard Webhooks secret: base64, with or
// without its "whsec_" prefix, as the reference libraries accept it.
func DecodeStandardSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("a Standard Webhooks secret is \"whsec_\" and base64 of at least one byte")
	}
	return key, nil
}

// Verify implements Verifier.
func (s Standard) Verify(h http.Header, body []byte, now time.Time) (Delivery, error) {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return Delivery{}, fmt.Errorf("webhook-id, webhook-timestamp and webhook-signature are required: %w", catalog.ErrHookSignature)
	}
	want := base64.StdEncoding.EncodeToString(mac(s.Secret, []byte(id), []byte("."), []byte(ts), []byte("."), body))
	if len(s.Secret) == 0 || !anyV1(sigs, want) {
		return Delivery{}, fmt.Errorf("no v1 signature in webhook-signature is the delivery's under the automation's secret: %w", catalog.ErrHookSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Delivery{}, fmt.Errorf("webhook-timestamp %q is not Unix seconds: %w", ts, catalog.ErrHookTimestamp)
	}
	// Compared in seconds, so that neither side overflows a Duration.
	skew := now.Unix() - sec
	if limit := int64(s.Window / time.Second); skew > limit || skew < -limit {
		return Delivery{}, fmt.Errorf("webhook-timestamp %s is %ds from the daemon's clock, more than the window %s: %w",
			ts, skew, s.Window, catalog.ErrHookTimestamp)
	}
	if _, err := headerValue(h, "webhook-id", true); err != nil {
		return Delivery{}, err
	}
	return Delivery{ID: id, Timestamp: time.Unix(sec, 0)}, nil
}

// anyV1 reports whether one of the space-separated "v1,<base64>" entries
// is want. Each is compared as text in constant time, as the reference
// libraries do: a base64 spelling with other padding bits is not the
// signature.
func anyV1(header, want string) bool {
	ok := false
	for _, entry := range strings.Split(header, " ") {
		if b64, isV1 := strings.CutPrefix(entry, "v1,"); isV1 && hmac.Equal([]byte(b64), []byte(want)) {
			ok = true
		}
	}
	return ok
}

func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// headerValue returns a header the daemon keeps (a delivery id, an event
// name): printable ASCII without spaces, at most MaxHeaderValue bytes.
func headerValue(h http.Header, name string, required bool) (string, error) {
	v := h.Get(name)
	if v == "" && !required {
		return "", nil
	}
	if v == "" || len(v) > MaxHeaderValue || strings.IndexFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", fmt.Errorf("%s %q: must be 1 to %d printable ASCII characters without spaces: %w", name, truncate(v), MaxHeaderValue, catalog.ErrBadInput)
	}
	return v, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
