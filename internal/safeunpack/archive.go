package safeunpack

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// Format is an archive's container, told by its magic bytes and never by
// its name, which the source chose.
type Format int

// The formats a tool source may come in.
const (
	Tar Format = iota + 1
	TarGzip
	Zip
)

func (f Format) String() string {
	switch f {
	case Tar:
		return "tar"
	case TarGzip:
		return "tar.gz"
	case Zip:
		return "zip"
	}
	return "unknown"
}

// Detect tells the format of the archive in src from its first bytes. A
// gzip stream is taken to hold a tar, which reading it then checks.
func Detect(src io.ReaderAt, size int64) (Format, error) {
	if size < 0 {
		return 0, fmt.Errorf("%w: a negative size", ErrFormat)
	}
	head := make([]byte, min(size, 512))
	if _, err := src.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return Zip, nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return TarGzip, nil
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return Tar, nil
	}
	return 0, ErrFormat
}

// Scan checks the archive in src as Extract would, writing nothing: every
// file's contents are read through and counted.
func Scan(src io.ReaderAt, size int64, lim Limits) (Report, error) {
	w := newWalker(lim, scanSink{})
	err := eachEntry(src, size, w)
	return w.rep, err
}

func eachEntry(src io.ReaderAt, size int64, w *walker) error {
	f, err := Detect(src, size)
	if err != nil {
		return err
	}
	sec := io.NewSectionReader(src, 0, size)
	switch f {
	case Zip:
		return zipEntries(sec, size, w)
	case TarGzip:
		gz, err := gzip.NewReader(sec)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
		defer gz.Close()
		return tarEntries(formatReader{gz}, w)
	}
	return tarEntries(sec, w)
}

func tarEntries(r io.Reader, w *walker) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		// With GODEBUG=tarinsecurepath=0 the reader flags a name it finds
		// unsafe but still returns its header: the name check decides.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			if errors.Is(err, ErrFormat) {
				return err
			}
			return fmt.Errorf("%w: %w", ErrFormat, err)
		}
		e := entry{name: h.Name, perm: fs.FileMode(h.Mode).Perm(), claim: h.Size,
			open: func() (io.ReadCloser, error) { return io.NopCloser(formatReader{tr}), nil }}
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			e.dir = true
		case tar.TypeXGlobalHeader:
			// Metadata for the whole archive (git archive puts the commit
			// there), not a member: counted, never written.
			if err := w.tick(h.Name); err != nil {
				return err
			}
			continue
		case tar.TypeSymlink:
			return fmt.Errorf("entry %q: %w (a symbolic link to %q)", h.Name, ErrLink, h.Linkname)
		case tar.TypeLink:
			return fmt.Errorf("entry %q: %w (a hard link to %q)", h.Name, ErrLink, h.Linkname)
		default:
			return fmt.Errorf("entry %q: %w (tar type %q)", h.Name, ErrSpecial, h.Typeflag)
		}
		if err := w.add(e); err != nil {
			return err
		}
	}
}

func zipEntries(r io.ReaderAt, size int64, w *walker) error {
	zr, err := zip.NewReader(r, size)
	// As for tar: GODEBUG=zipinsecurepath=0 flags names, the check decides.
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	for _, f := range zr.File {
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return fmt.Errorf("entry %q: %w (a symbolic link)", f.Name, ErrLink)
		case mode&(fs.ModeType&^fs.ModeDir) != 0:
			return fmt.Errorf("entry %q: %w (mode %v)", f.Name, ErrSpecial, mode)
		}
		e := entry{name: f.Name, dir: mode.IsDir(), perm: mode.Perm(), claim: int64(min(f.UncompressedSize64, 1<<62)),
			open: func() (io.ReadCloser, error) {
				rc, err := f.Open()
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ErrFormat, err)
				}
				return struct {
					io.Reader
					io.Closer
				}{formatReader{rc}, rc}, nil
			}}
		if err := w.add(e); err != nil {
			return err
		}
	}
	return nil
}
