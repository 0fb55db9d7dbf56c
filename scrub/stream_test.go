package scrub

import (
	"bytes"
	"errors"
	mrand "math/rand"
	"strings"
	"testing"
)

func placeholderName(f Finding) string { return "[REDACTED:" + f.Rule + ":1]" }

// streamed writes text to a Stream in the given pieces and returns what it emitted,
// with findings replaced, and how many emits there were.
func streamed(t testing.TB, s *Scrubber, pieces [][]byte) (string, int) {
	t.Helper()
	var out bytes.Buffer
	emits := 0
	st := NewStream(s, func(text []byte, fs []Finding) error {
		emits++
		for _, f := range fs {
			if f.Start < 0 || f.End > len(text) || f.Start >= f.End || string(text[f.Start:f.End]) != f.Secret {
				t.Fatalf("finding %+v does not fit the emitted text %q", f, text)
			}
		}
		out.Write(Replace(text, fs, placeholderName))
		return nil
	})
	for _, p := range pieces {
		if n, err := st.Write(p); err != nil || n != len(p) {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String(), emits
}

func whole(s *Scrubber, text []byte) string {
	return string(Replace(text, s.Find(text), placeholderName))
}

// TestStreamEverySplit writes a text with secrets in two pieces, split at every offset:
// the output must always be what Find finds on the whole text.
func TestStreamEverySplit(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(21))}
	var b strings.Builder
	b.WriteString("$ env | sort\n")
	for _, fam := range families {
		line, _ := fam.make(f)
		b.WriteString(line)
	}
	b.WriteString("password:\n  " + f.pick(alnum, 20) + "7\n") // a match over two lines
	b.WriteString(pemKeys()[1])
	b.WriteString("no newline at the end: ghp_" + f.pick(alnum, 36))
	text := []byte(b.String())
	want := whole(s, text)
	if !strings.Contains(want, "[REDACTED:private-key:1]") || strings.Count(want, "[REDACTED:") < len(families) {
		t.Fatalf("the text should be full of secrets: %s", want)
	}
	step := 1
	if raceEnabled {
		step = 7
	}
	for i := 0; i <= len(text); i += step {
		if got, _ := streamed(t, s, [][]byte{text[:i], text[i:]}); got != want {
			t.Fatalf("split at %d (%q|%q):\ngot  %s\nwant %s", i, text[max(0, i-10):i], text[i:min(len(text), i+10)], got, want)
		}
	}
	// Byte by byte.
	var pieces [][]byte
	for i := range text {
		pieces = append(pieces, text[i:i+1])
	}
	if got, _ := streamed(t, s, pieces); got != want {
		t.Fatalf("byte by byte:\ngot  %s\nwant %s", got, want)
	}
}

// TestStreamHoldsPrivateKey checks a key block is emitted only whole, as one finding,
// whatever the pieces.
func TestStreamHoldsPrivateKey(t *testing.T) {
	s := newTestScrubber(t)
	key := pemKeys()[0]
	text := []byte("starting\n" + key + "done\n")
	var emitted []string
	st := NewStream(s, func(text []byte, fs []Finding) error {
		emitted = append(emitted, string(Replace(text, fs, placeholderName)))
		return nil
	})
	lines := bytes.SplitAfter(text, []byte("\n"))
	for i, l := range lines {
		if _, err := st.Write(l); err != nil {
			t.Fatal(err)
		}
		// While the block is open nothing of it may be out.
		if i > 1 && i < len(lines)-2 && strings.Contains(strings.Join(emitted, ""), "-----BEGIN") {
			t.Fatalf("part of an open key block was emitted: %q", emitted)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(emitted, ""); got != "starting\n[REDACTED:private-key:1]\ndone\n" {
		t.Fatalf("got %q", got)
	}
}

// TestStreamPrivateKeyWithoutEnd: a BEGIN line with no END is held up to the bound, and
// Close emits it.
func TestStreamPrivateKeyWithoutEnd(t *testing.T) {
	s := newTestScrubber(t)
	var out bytes.Buffer
	emits := 0
	st := NewStream(s, func(text []byte, fs []Finding) error {
		emits++
		out.Write(text)
		return nil
	})
	st.Write([]byte("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"))
	if out.String() != "a\n" {
		t.Fatalf("emitted %q while the block is open", out.String())
	}
	big := bytes.Repeat([]byte("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n"), maxHeldPEM/36+10)
	st.Write(big)
	if !strings.Contains(out.String(), "BEGIN RSA") {
		t.Fatal("a block larger than the bound is still held")
	}
	st.Close()
	if out.Len() != len("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n")+len(big) {
		t.Fatal("bytes lost")
	}
}

// TestStreamLongLine: a line longer than the bound is cut, but not inside a secret.
func TestStreamLongLine(t *testing.T) {
	s := newTestScrubber(t)
	f := fakes{mrand.New(mrand.NewSource(22))}
	var b bytes.Buffer
	var secrets []string
	for b.Len() < 3*maxLine {
		b.WriteString(`{"k":"` + f.pick(alnum, 30) + `"},`)
		if f.r.Intn(500) == 0 {
			sec := "ghp_" + f.pick(alnum, 36)
			secrets = append(secrets, sec)
			b.WriteString(`{"token":"` + sec + `"},`)
		}
	}
	text := b.Bytes()
	var pieces [][]byte
	for p := 0; p < len(text); p += 4093 {
		pieces = append(pieces, text[p:min(len(text), p+4093)])
	}
	got, emits := streamed(t, s, pieces)
	if emits < 3 {
		t.Fatalf("a %d-byte line should have been cut, emits: %d", len(text), emits)
	}
	for _, sec := range secrets {
		if strings.Contains(got, sec) {
			t.Fatalf("secret %s leaked", sec)
		}
	}
	if want := whole(s, text); got != want {
		t.Fatal("output differs from Find on the whole line")
	}
}

func TestStreamEmitError(t *testing.T) {
	s := newTestScrubber(t)
	boom := errors.New("boom")
	st := NewStream(s, func([]byte, []Finding) error { return boom })
	if _, err := st.Write([]byte("line\n")); !errors.Is(err, boom) {
		t.Fatalf("Write: %v", err)
	}
	if _, err := st.Write([]byte("more\n")); !errors.Is(err, boom) {
		t.Fatalf("second Write: %v", err)
	}
	if err := st.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close: %v", err)
	}
}

// FuzzStream: any input, cut anywhere, gives the same output as Find and Replace on the
// whole input, and no panic.
func FuzzStream(f *testing.F) {
	r := mrand.New(mrand.NewSource(23))
	fk := fakes{r}
	for _, fam := range families {
		line, _ := fam.make(fk)
		f.Add([]byte("x\n"+line+"y\n"), uint64(r.Int63()))
	}
	f.Add([]byte(pemKeys()[1]), uint64(3))
	f.Add([]byte("token:\n   "+fk.pick(alnum, 24)+"9\n"), uint64(5))
	f.Add(fakeLogs(r, 30), uint64(7))
	f.Add([]byte("QUtJQUlPU0ZPRE5ON0VYQU1QTEU= "+base64Std("AKIA"+fk.pick(base32U, 16))+"\n"), uint64(11))
	f.Add([]byte("\n\n\r\n"), uint64(0))
	s, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, cuts uint64) {
		want := whole(s, data)
		// Cut where the bits of cuts say, at most 64 pieces.
		var pieces [][]byte
		prev := 0
		for i := 1; i < len(data); i++ {
			if cuts>>(uint(i)%64)&1 == 1 && i%((len(data)/64)+1) == 0 {
				pieces = append(pieces, data[prev:i])
				prev = i
			}
		}
		pieces = append(pieces, data[prev:])
		got, _ := streamed(t, s, pieces)
		if got != want {
			t.Fatalf("stream:\n%q\nwhole:\n%q", got, want)
		}
	})
}
