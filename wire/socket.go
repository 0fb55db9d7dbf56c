package wire

import "github.com/contextd/contextd/wire/lite"

// DefaultSocketPath is where the daemon listens and clients connect (see
// lite.DefaultSocketPath, which both protocols share).
func DefaultSocketPath() string { return lite.DefaultSocketPath() }
