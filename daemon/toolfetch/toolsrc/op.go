package toolsrc

import "time"

// Op is one fetch, as the host hands it to the sandbox (the tool mode
// operation tool_fetch, as JSON on its stdin).
type Op struct {
	// Source is Source.Locked(): absolute, without a checksum.
	Source string `json:"source"`
	// Dest is the staging tree: an empty directory the fetch fills.
	Dest string `json:"dest"`
	// Work is an empty directory for the download or the clone, left
	// behind for the host to remove.
	Work     string        `json:"work"`
	MaxBytes int64         `json:"max_bytes"`
	MaxFiles int           `json:"max_files"`
	Timeout  time.Duration `json:"timeout"`
	// Env is the fetch's whole environment (PATH, HOME, the proxy's
	// variables): a function-mode sandbox init keeps the one it started
	// with, so Main puts this one in its place.
	Env []string `json:"env,omitempty"`
}

// Result is what a fetch reports, as JSON on its stdout.
type Result struct {
	// Resolved pins what came: "git:<commit>", "sha256:<hex>" of an
	// archive, or "" for a local directory (the host hashes the tree).
	Resolved string `json:"resolved"`
	Files    int    `json:"files"`
	Dirs     int    `json:"dirs"`
	Bytes    int64  `json:"bytes"`
}
