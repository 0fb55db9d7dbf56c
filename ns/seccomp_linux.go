package ns

import "github.com/contextd/contextd/seccomp"

// loadable is a compiled profile, ready to be installed in this process.
type loadable interface{ Load() error }

// parseSeccomp parses and compiles the profile during setup, before the
// release: a bad profile is then a setup error reported before anything
// runs, and all that is left for the last step is the kernel load itself.
func parseSeccomp(data []byte) (loadable, error) {
	p, err := seccomp.Parse(data)
	if err != nil {
		return nil, err
	}
	return p.Compile()
}
