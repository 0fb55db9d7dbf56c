// Package homeview decides what of the user's home a sandboxed call sees.
//
// $HOME is hidden by default. On top of it a call sees, read-only, what
// development needs: git's configuration, the toolchains the user's PATH
// reaches, and the configuration of the toolchains the workspace uses
// (Presets, one table). Configuration files that may hold credentials are
// shown only as copies with placeholders; toolchain caches only as the lower
// layer of an overlay. Whatever is shown, the credential deny-list (deny.go)
// is never: a configured path that touches it is refused, and every
// deny-listed path below a shown directory is masked.
//
// The package only decides; the daemon renders the scrubbed copies, leases
// the cache layers and builds the sandbox's mounts from a View.
package homeview
