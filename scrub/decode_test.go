package scrub

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

// TestEncodedSecrets: secrets inside base64, hex, percent and unicode escapes are found
// (as gitleaks stdin finds them), and the finding is the whole encoded segment.
func TestEncodedSecrets(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{newRand(51)}
	aws := "AKIA" + f.pick(base32U, 16)
	ghp := "ghp_" + f.pick(alnum, 36)
	b64 := base64.StdEncoding.EncodeToString([]byte("aws_access_key_id=" + aws))
	nested := base64.StdEncoding.EncodeToString([]byte("token: " + base64.StdEncoding.EncodeToString([]byte(ghp))))
	hx := hex.EncodeToString([]byte(ghp))
	pct := url.QueryEscape("https://x:" + ghp + "@github.com")
	var uni strings.Builder
	for _, c := range ghp {
		uni.WriteString(`\u00` + hex.EncodeToString([]byte{byte(c)}))
	}
	for _, tc := range []struct{ name, text, segment string }{
		{"base64", "data:\n  config: " + b64 + "\n", b64},
		{"base64 in base64", "blob=" + nested + "\n", nested},
		{"hex", "payload " + hx + " end\n", hx},
		{"percent", "GET /redirect?to=" + pct + " HTTP/1.1\n", ""},
		{"unicode escapes", `{"t": "` + uni.String() + `"}` + "\n", uni.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := s.Find([]byte(tc.text))
			if len(fs) == 0 {
				t.Fatalf("nothing found in %q", tc.text)
			}
			if tc.segment != "" {
				covered := false
				for _, x := range fs {
					covered = covered || x.Secret == tc.segment
				}
				if !covered {
					t.Fatalf("want the encoded segment %q, got %+v", tc.segment, fs)
				}
			}
		})
	}
	// Random base64 and hex (hashes, binary payloads) decode to nothing printable.
	blob := make([]byte, 96)
	f.r.Read(blob)
	text := "sha256:" + hex.EncodeToString(blob[:32]) + " payload=" + base64.StdEncoding.EncodeToString(blob) + "\n"
	if fs := s.Find([]byte(text)); len(fs) != 0 {
		t.Fatalf("found %+v in %q", fs, text)
	}
}

// TestEncodedMatches checks the hand-written scan of gitleaks' encodings pattern against
// the pattern itself.
func TestEncodedMatches(t *testing.T) {
	re := mustCompileEncodings()
	r := newRand(52)
	escapes := []string{"%", "2", "F", "a", "g", "U", "+", "0", "4", "1", "\\", "u", "=", "/", "-", "_", " ", "x", "Z", "9", "\t", "."}
	// Without % and backslash, as most source code: mayEncode rules lines out.
	words := []string{"a", "B", "U", "+", "0", "9", "-", "_", "/", "=", "x", "f", " ", ".", "(", "\t"}
	ruledOut := 0
	for i := 0; i < 40000; i++ {
		alphabet := escapes
		if i%2 == 1 {
			alphabet = words
		}
		var b strings.Builder
		for n := r.Intn(80); n > 0; n-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		line := []byte(b.String())
		var want []encMatch
		for _, m := range re.FindAllSubmatchIndex(line, -1) {
			for k := 0; k < encCount; k++ {
				if m[2+2*k] >= 0 {
					want = append(want, encMatch{m[2+2*k], m[3+2*k], k})
					break
				}
			}
		}
		got := encodedMatches(line, nil)
		if !mayEncode(line) {
			ruledOut++
			if len(got) > 0 {
				t.Fatalf("%q: mayEncode says no, but it has %v", line, got)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%q: got %v, want %v", line, got, want)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("%q: got %v, want %v", line, got, want)
			}
		}
	}
	if ruledOut < 2000 {
		t.Errorf("mayEncode ruled out only %d lines", ruledOut)
	}
}

// TestEscapes checks the chunk-wide search for escapes against searching each line.
func TestEscapes(t *testing.T) {
	r := newRand(53)
	alphabet := []string{"%", "\\", "U", "+", "U+", "a", " ", "\n", "\n", "\n", "x", "="}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := r.Intn(200); n > 0; n-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		text := []byte(b.String())
		limit := r.Intn(len(text) + 1)
		e := escapes{text: text[:limit]}
		for ls := 0; ls < limit; {
			le := bytes.IndexByte(text[ls:], '\n')
			if le < 0 {
				le = len(text)
			} else {
				le += ls
			}
			line := text[ls:min(le, limit)]
			want := bytes.IndexByte(line, '%') >= 0 || bytes.IndexByte(line, '\\') >= 0 || bytes.Contains(line, []byte("U+"))
			if got := e.within(ls, min(le, limit)); got != want {
				t.Fatalf("%q, line %q: within says %v", text, line, got)
			}
			ls = le + 1
		}
	}
}

// TestDecodeBase64 checks decodeBase64, which rejects most binary after decoding four
// characters, against decoding everything: standard base64, then unpadded URL-safe, the
// first that decodes to printable text.
func TestDecodeBase64(t *testing.T) {
	want := func(enc []byte) []byte {
		if !bytes.ContainsAny(enc, "0123456789+/-_") {
			return nil
		}
		for _, e := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
			out, err := e.DecodeString(string(enc))
			if err == nil && allPrintable(out) {
				return out
			}
		}
		return nil
	}
	r := newRand(64)
	alphabet := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_="
	var inputs [][]byte
	for i := 0; i < 20000; i++ {
		var enc []byte
		switch i % 3 {
		case 0: // encoded text, standard or URL-safe, maybe cut or with a byte changed
			plain := make([]byte, 12+r.Intn(40))
			for j := range plain {
				plain[j] = byte(' ' + r.Intn(95))
			}
			if i%2 == 0 {
				enc = []byte(base64.StdEncoding.EncodeToString(plain))
			} else {
				enc = []byte(base64.RawURLEncoding.EncodeToString(plain))
			}
			if r.Intn(3) == 0 {
				enc = enc[:len(enc)-r.Intn(4)]
			}
			if r.Intn(3) == 0 {
				enc[r.Intn(len(enc))] = alphabet[r.Intn(len(alphabet))]
			}
		case 1: // encoded binary
			raw := make([]byte, 12+r.Intn(60))
			r.Read(raw)
			enc = []byte(base64.StdEncoding.EncodeToString(raw))
		default: // anything from the alphabet
			enc = make([]byte, 16+r.Intn(40))
			for j := range enc {
				enc[j] = alphabet[r.Intn(len(alphabet))]
			}
		}
		inputs = append(inputs, enc)
	}
	decoded := 0
	for _, enc := range inputs {
		got, _ := decodeBase64(enc, nil)
		w := want(enc)
		if !bytes.Equal(got, w) {
			t.Fatalf("%q: got %q, want %q", enc, got, w)
		}
		if w != nil {
			decoded++
		}
	}
	if decoded < len(inputs)/10 {
		t.Errorf("only %d of %d inputs decoded", decoded, len(inputs))
	}
}
