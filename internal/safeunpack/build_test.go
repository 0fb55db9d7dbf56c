package safeunpack

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io/fs"
	"testing"
)

// member is one entry of an archive a test builds.
type member struct {
	name string
	body string
	mode int64
	kind byte // a tar type flag; zip maps it to a file mode
	link string
	size int64 // the declared size when it is not len(body); zeros fill it
}

func (m member) typeflag() byte {
	if m.kind == 0 {
		return tar.TypeReg
	}
	return m.kind
}

func (m member) perm() int64 {
	if m.mode == 0 {
		return 0o644
	}
	return m.mode
}

func tarOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := &tar.Header{Name: m.name, Mode: m.perm(), Typeflag: m.typeflag(), Linkname: m.link, Format: tar.FormatPAX}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(m.body))
			if m.size > 0 {
				h.Size = m.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", m.name, err)
		}
		if h.Typeflag == tar.TypeReg {
			body := []byte(m.body)
			if m.size > 0 {
				body = make([]byte, m.size)
			}
			if _, err := tw.Write(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t testing.TB, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		mode := fs.FileMode(m.perm()).Perm()
		if m.perm()&0o4000 != 0 {
			mode |= fs.ModeSetuid
		}
		body := []byte(m.body)
		switch m.typeflag() {
		case tar.TypeDir:
			mode |= fs.ModeDir
		case tar.TypeSymlink:
			mode |= fs.ModeSymlink
			body = []byte(m.link)
		case tar.TypeFifo:
			mode |= fs.ModeNamedPipe
		}
		if m.size > 0 {
			body = make([]byte, m.size)
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatalf("zip header %q: %v", m.name, err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
