package intercept

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/mcp/jsonscan"
	"github.com/contextd/contextd/scrub"
)

var (
	realScrubberOnce sync.Once
	realScrubber     *scrub.Scrubber
	realScrubberErr  error
)

// testScrubber is contextd's real scrubber (gitleaks' default rules and
// contextd's own) with a vault of its own.
func testScrubber(t testing.TB) *VaultScrubber {
	t.Helper()
	realScrubberOnce.Do(func() { realScrubber, realScrubberErr = scrub.New(nil) })
	if realScrubberErr != nil {
		t.Fatal(realScrubberErr)
	}
	return &VaultScrubber{Scrubber: realScrubber, Vault: scrub.NewVault(), Source: "mcp:test"}
}

// fakeToken makes a GitHub personal access token gitleaks recognises.
func fakeToken(seed uint64) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, 36)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return "ghp_" + string(b)
}

func TestScrubMessage(t *testing.T) {
	sc := testScrubber(t)
	tok := fakeToken(1)
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yq0ycd2dRyfH1K5i9cH2g7P+Ayu8JhV3yB5aNLrAGWvBtIeFdD7z\n-----END RSA PRIVATE KEY-----"
	msgs := map[string]any{
		"jsonrpc": "2.0", "id": 7,
		"result": map[string]any{
			"content": []any{
				map[string]any{"type": "text", "text": "echo: " + tok + " done"},
				map[string]any{"type": "text", "text": key},
			},
			"meta": map[string]any{tok: "a member name is never scrubbed"},
		},
	}
	raw, _ := json.Marshal(msgs)
	s, e, err := jsonscan.Document(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, n, err := scrubMessage(sc, raw, s, e)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Errorf("%d replacements, want at least 2 (token and key): %s", n, out)
	}
	if !json.Valid(out) {
		t.Fatalf("scrubbed message is not JSON: %s", out)
	}
	var got struct {
		ID     int `json:"id"`
		Result struct {
			Content []struct{ Text string }
			Meta    map[string]string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Result.Content[0].Text, tok) || !strings.Contains(got.Result.Content[0].Text, "[REDACTED:github-pat:1]") {
		t.Errorf("token not replaced by its placeholder: %q", got.Result.Content[0].Text)
	}
	if strings.Contains(got.Result.Content[1].Text, "MIIEow") || !strings.HasPrefix(got.Result.Content[1].Text, "[REDACTED:") {
		t.Errorf("private key (JSON-escaped newlines) not scrubbed: %q", got.Result.Content[1].Text)
	}
	if _, ok := got.Result.Meta[tok]; !ok {
		t.Errorf("a member name was changed: %v", got.Result.Meta)
	}
	if got.ID != 7 {
		t.Errorf("envelope changed: id %d", got.ID)
	}

	// The same secret in another message gets the same placeholder (the
	// session's vault).
	raw2 := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"again ` + tok + `"}}`)
	out2, _, err := scrubMessage(sc, raw2, 0, len(raw2))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out2, []byte("[REDACTED:github-pat:1]")) {
		t.Errorf("second sighting got another placeholder: %s", out2)
	}
}

func TestScrubNothingFoundIsByteExact(t *testing.T) {
	sc := testScrubber(t)
	raw := []byte(`{"jsonrpc":"2.0", "id":"a",  "result":{"content":[{"type":"text","text":"no secret here \u00e9 \/ ok"}],"x":1.50e+1}}`)
	out, n, err := scrubMessage(sc, raw, 0, len(raw))
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || &out[0] != &raw[0] || len(out) != len(raw) {
		t.Errorf("message without secrets was rewritten (n=%d): %s", n, out)
	}
}

func TestScrubUsesMemberNameAsContext(t *testing.T) {
	sc := testScrubber(t)
	// A random value is only a credential because of the name it is
	// assigned to: contextd's credential-named-assignment rule.
	raw := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{"DB_PASSWORD":"q8Zr2vLx7TmW4pKs9NbY","note":"q8Zr2vLx7TmW4pKs9NbY-not-assigned"}}}`)
	out, n, err := scrubAt(sc, raw, argumentsPath)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || bytes.Contains(out, []byte(`"DB_PASSWORD":"q8Zr`)) {
		t.Errorf("credential-named value not scrubbed: %s", out)
	}
	if !bytes.Contains(out, []byte(`"name":"deploy"`)) {
		t.Errorf("something outside the arguments changed: %s", out)
	}
}

func TestScrubText(t *testing.T) {
	sc := testScrubber(t)
	tok := fakeToken(2)
	out, err := ScrubJSON(sc, []byte("not json "+tok))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte(tok)) {
		t.Errorf("non-JSON bytes not scrubbed as text: %s", out)
	}
	batch := []byte(`[{"jsonrpc":"2.0","id":1,"result":{"t":"` + tok + `"}},{"jsonrpc":"2.0","id":2,"result":{"t":"x"}}]`)
	out, err = ScrubJSON(sc, batch)
	if err != nil || bytes.Contains(out, []byte(tok)) || !json.Valid(out) {
		t.Errorf("batch not scrubbed: %s, %v", out, err)
	}
}

// TestScrubInvalidUTF8: a message that is JSON but for bytes that are not
// UTF-8 (the relay refuses it; the record keeps it) is scrubbed as text,
// which decodes escapes too, so an escaped secret does not slip through;
// with nothing to hide it is kept as it came.
func TestScrubInvalidUTF8(t *testing.T) {
	sc := testScrubber(t)
	tok := fakeToken(4)
	escaped := `\u0067` + tok[1:] // the token with its first letter escaped
	raw := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\xff\",\"t\":\"" + escaped + "\"}}")
	out, err := ScrubJSON(sc, raw)
	if err != nil || bytes.Contains(out, []byte(escaped)) || !bytes.Contains(out, []byte("[REDACTED:")) || !json.Valid(out) {
		t.Errorf("escaped secret beside invalid UTF-8: %q, %v", out, err)
	}
	clean := []byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":\"\xff\"}}")
	if out, err := ScrubJSON(sc, clean); err != nil || &out[0] != &clean[0] || len(out) != len(clean) {
		t.Errorf("nothing to hide, yet rewritten: %q, %v", out, err)
	}
}

// FuzzScrubWalker feeds untrusted messages to the scrub walker: it never
// panics, keeps JSON valid, changes nothing when it finds nothing, and leaves
// no planted secret behind.
func FuzzScrubWalker(f *testing.F) {
	tok := fakeToken(3)
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`), false)
	f.Add([]byte(`{"a":["x",{"b":"y"}],"c":"\u0067hp_"}`), true)
	f.Add([]byte(`{"api_key":"zq81vbnm29xcv7lkj3hg"}`), true)
	f.Add([]byte(`[1,"2",{"3":"4"}]`), false)
	f.Add([]byte(`not json at all`), true)
	sc := testScrubber(f)
	f.Fuzz(func(t *testing.T, raw []byte, plant bool) {
		if plant && json.Valid(raw) && bytes.HasPrefix(raw, []byte("{")) && len(raw) > 1 {
			// Put a secret in a new member, to check nothing lets it through.
			raw = append([]byte(`{"planted":"`+tok+`",`), raw[1:]...)
			if !json.Valid(raw) {
				raw = []byte(`{"planted":"` + tok + `"}`)
			}
		}
		out, err := ScrubJSON(sc, raw)
		if err != nil {
			return // refused (too deep): the engine blocks such a message
		}
		if json.Valid(raw) && !json.Valid(out) {
			t.Fatalf("scrubbing broke the JSON: %q -> %q", raw, out)
		}
		if plant && bytes.Contains(raw, []byte(`"planted":"`+tok)) && bytes.Contains(out, []byte(tok)) {
			t.Fatalf("planted token survived: %q", out)
		}
		if len(sc.Find(raw)) == 0 && json.Valid(raw) && !bytes.Equal(out, raw) {
			// Nothing in the raw text; the decoded strings may still hold an
			// escaped secret, which is then found and replaced.
			var v any
			_ = json.Unmarshal(raw, &v)
			dec, _ := json.Marshal(v)
			if len(sc.Find(dec)) == 0 && !bytes.Contains(out, []byte("[REDACTED:")) {
				t.Fatalf("changed a message with no secret: %q -> %q", raw, out)
			}
		}
	})
}

// BenchmarkScrubDeep scrubs a 1 MB message nested 500 deep, under the
// limit: the walk reads it once, where one that checked each nested value
// whole before descending into it read it once per level (a second per
// message, a stall a server could cause at will).
func BenchmarkScrubDeep(b *testing.B) {
	sc := testScrubber(b)
	filler := `"` + strings.Repeat("a", 2000) + `",`
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("["+filler, 500) + "1" + strings.Repeat("]", 500) + `}`)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := ScrubJSON(sc, msg); err != nil {
			b.Fatal(err)
		}
	}
}
