//go:build !linux || !cgo

package seccomp

import (
	"fmt"
	"io"
	"runtime"
)

// Filter is a compiled profile. Without Linux and cgo (libseccomp) there is
// none: every method fails with ErrUnsupported, so a build without them
// fails closed rather than running unfiltered.
type Filter struct{}

func unsupported() error {
	return fmt.Errorf("%w: built for %s without cgo/libseccomp", ErrUnsupported, runtime.GOOS)
}

// Compile validates the profile, then fails: this build has no libseccomp.
func (p *Profile) Compile() (*Filter, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return nil, unsupported()
}

// Skipped returns nil.
func (f *Filter) Skipped() []string { return nil }

// Load fails with ErrUnsupported.
func (f *Filter) Load() error { return unsupported() }

// Release does nothing.
func (f *Filter) Release() {}

// ExportBPF fails with ErrUnsupported.
func (f *Filter) ExportBPF(io.Writer) error { return unsupported() }

// ExportPFC fails with ErrUnsupported.
func (f *Filter) ExportPFC(io.Writer) error { return unsupported() }

// Load fails with ErrUnsupported (after validating the profile).
func (p *Profile) Load() error {
	_, err := p.Compile()
	return err
}

// ExportBPF fails with ErrUnsupported (after validating the profile).
func (p *Profile) ExportBPF(io.Writer) error {
	_, err := p.Compile()
	return err
}
