package inside

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/contextd/contextd/daemon/tools/toolproto"
	"github.com/contextd/contextd/scrub"
)

var testScrubber = sync.OnceValues(func() (*scrub.Scrubber, error) { return scrub.New(nil) })

func scrubberT(t testing.TB) *scrub.Scrubber {
	t.Helper()
	sc, err := testScrubber()
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// pemKey is a fresh RSA key in PEM, a multi-line secret.
func pemKey(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func randAlnum(t *testing.T, n int) string {
	const set = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = set[int(b[i])%len(set)]
	}
	return string(b)
}

// readFrames runs safe_read's scrub and numbering on file and decodes the
// frames as the daemon does: secrets become vault placeholders.
func readFrames(t *testing.T, file string, first, limit, window int, v *scrub.Vault) (out string, raw int, secrets int) {
	t.Helper()
	out, gaps, secrets := readGaps(t, file, first, limit, window, v)
	for _, g := range gaps {
		raw += int(g.Len)
	}
	return out, raw, secrets
}

// readGaps is readFrames that also returns the gap frames; out has each gap
// rendered from the file, as a page would make it.
func readGaps(t *testing.T, file string, first, limit, window int, v *scrub.Vault) (out string, gaps []toolproto.Gap, secrets int) {
	t.Helper()
	var sel selection
	if first == 1 && limit < 0 {
		// The whole-file path reads an *os.File.
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf, release, err := readWhole(f, bufio.NewReader(f))
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		sel = selection{buf: buf, a: 0, e: len(buf)}
	} else {
		var err error
		if sel, err = selectLines(bufio.NewReaderSize(strings.NewReader(file), 64<<10), first, limit); err != nil {
			t.Fatal(err)
		}
	}
	var wire bytes.Buffer
	fw := toolproto.NewWriter(&wire)
	fs, rf, rt := findSelected(scrubberT(t), sel.buf, sel.a, sel.e, window)
	if err := emitNumbered(fw, sel.buf, sel.base, sel.a, sel.e, first, fs, rf, rt, nil); err != nil {
		t.Fatal(err)
	}
	if err := fw.Meta(toolproto.Meta{}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r := &toolproto.Reader{
		OnText: func(p []byte, scrubbed bool) error {
			if !scrubbed {
				t.Error("a raw frame in a first read")
			}
			b.Write(p)
			return nil
		},
		OnGap: func(g toolproto.Gap) error {
			z := numberer{line: g.Line, atStart: g.AtStart}
			r := z.put(nil, []byte(file[g.From:g.To]))
			if int64(len(r)) != g.Len || int64(bytes.Count(r, []byte{'\n'})) != g.Lines {
				t.Errorf("gap %+v: rendering has %d bytes, %d lines", g, len(r), bytes.Count(r, []byte{'\n'}))
			}
			gaps = append(gaps, g)
			b.Write(r)
			return nil
		},
		OnSecret: func(s toolproto.Secret) error {
			secrets++
			b.WriteString(v.Placeholder(s.Rule, string(s.Secret), "/w/app.env"))
			return nil
		}}
	// Feed in small pieces: frames split across writes.
	for p := wire.Bytes(); len(p) > 0; {
		n := min(len(p), 7)
		if _, err := r.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if _, got := r.Meta(); !r.Complete() || !got {
		t.Fatal("frames incomplete")
	}
	return b.String(), gaps, secrets
}

// unnumber strips "%6d\t" from every line, as an agent editing the file does.
func unnumber(t *testing.T, s string) (string, []int) {
	t.Helper()
	var b strings.Builder
	var nums []int
	for _, l := range strings.SplitAfter(s, "\n") {
		if l == "" {
			continue
		}
		num, rest, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("line without a number: %q", l)
		}
		var n int
		fmt.Sscan(num, &n)
		nums = append(nums, n)
		b.WriteString(rest)
	}
	return b.String(), nums
}

// A file read with secrets, PEM key included, comes back with placeholders
// only and the file's own line numbers; with the numbers stripped and the
// placeholders restored it is the file, byte for byte.
func TestReadRoundTrip(t *testing.T) {
	key := pemKey(t)
	tok := "ghp_" + randAlnum(t, 36)
	pw := randAlnum(t, 24)
	file := "# settings\nGITHUB_TOKEN=" + tok + "\n" + key + "DB_PASSWORD=" + pw + "\nLOG=info"
	v := scrub.NewVault()
	out, raw, n := readFrames(t, file, 1, -1, 0, v)
	for _, s := range []string{tok, pw, strings.Split(key, "\n")[3]} {
		if strings.Contains(out, s) {
			t.Fatalf("secret %q in output:\n%s", s, out)
		}
	}
	if raw != 0 || n != 3 {
		t.Fatalf("raw %d bytes, %d secrets; want 0 and 3:\n%s", raw, n, out)
	}
	plain, nums := unnumber(t, out)
	keyLines := strings.Count(key, "\n")
	want := []int{1, 2, 3, 3 + keyLines, 4 + keyLines}
	if fmt.Sprint(nums) != fmt.Sprint(want) {
		t.Errorf("line numbers %v, want %v:\n%s", nums, want, out)
	}
	back, restored, unresolved := v.Restore([]byte(plain), "/w/app.env")
	if string(back) != file+"\n" || restored != 3 || len(unresolved) != 0 {
		t.Fatalf("round trip: restored %d, unresolved %v:\n%q\nwant\n%q", restored, unresolved, back, file+"\n")
	}
}

// A selection (offset, limit) that starts or ends inside a multi-line secret
// still hides all of it.
func TestReadSelectionCutsSecret(t *testing.T) {
	key := pemKey(t)
	file := "a\nb\n" + key + "c\nd\n"
	keyLines := strings.Count(key, "\n")
	key2 := strings.Split(key, "\n")[2]
	for _, c := range []struct{ first, limit int }{{4, 2}, {1, 4}, {5, -1}, {3 + keyLines - 1, 3}} {
		out, _, _ := readFrames(t, file, c.first, c.limit, 0, scrub.NewVault())
		if strings.Contains(out, key2) || strings.Contains(out, "MII") {
			t.Errorf("offset %d limit %d: key in output:\n%s", c.first, c.limit, out)
		}
		if !strings.Contains(out, "[REDACTED:private-key") {
			t.Errorf("offset %d limit %d: no placeholder:\n%s", c.first, c.limit, out)
		}
	}
	out, _, n := readFrames(t, file, 3+keyLines, 2, 0, scrub.NewVault())
	if n != 0 || out != fmt.Sprintf("%6d\tc\n%6d\td\n", 3+keyLines, 4+keyLines) {
		t.Errorf("lines after the key: %d secrets:\n%q", n, out)
	}
}

// A long read scrubs its two ends in the sandbox and sends a gap for the
// middle;
// a secret on the edge of the window widens it instead of being cut.
func TestReadWindowed(t *testing.T) {
	tok := "ghp_" + randAlnum(t, 36)
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "line %d of a long log\n", i)
		if i == 1000 {
			fmt.Fprintf(&b, "GITHUB_TOKEN=%s\n", tok)
		}
	}
	fmt.Fprintf(&b, "tail GITHUB_TOKEN=%s\n", tok)
	file := b.String()
	v := scrub.NewVault()
	out, raw, n := readFrames(t, file, 1, -1, 64<<10, v)
	if raw == 0 || raw > len(out)-2*(64<<10) {
		t.Errorf("raw %d bytes of %d, want the middle only", raw, len(out))
	}
	if n != 2 || strings.Contains(out, tok) {
		t.Errorf("%d secrets, want the head's and the tail's; leaked: %v", n, strings.Contains(out, tok))
	}
	plain, _ := unnumber(t, out)
	if back, _, _ := v.Restore([]byte(plain), "/w/app.env"); string(back) != file {
		t.Error("windowed read does not restore to the file")
	}
	at := strings.Index(file, tok)
	for _, w := range []int{at + 1, at + 20} { // the window's edge on the secret
		out, _, n := readFrames(t, file, 1, -1, w, scrub.NewVault())
		if strings.Contains(out, tok) || n != 2 {
			t.Errorf("window %d: secret on the edge leaked or missed (%d secrets)", w, n)
		}
	}
}
