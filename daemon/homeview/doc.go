// Package homeview decides what of the user's home a sandboxed call sees.
//
// $HOME is hidden by default. On top of it a call sees, read-only, what
// development needs: git's configuration, the toolchains the user's PATH
// reaches, the configuration of those toolchains, and the caches of the
// toolchains the workspace uses (Presets, one table). Every file shown is either one that cannot hold a
// credential or a copy with placeholders in place of its secrets: the
// configuration files of the presets, and the known credential files below
// any shown directory (prefixSecrets). Of a PATH link below the home only
// the target file is shown, or its install prefix when it is one, never
// the checkout it lies in. Toolchain caches show only as the lower layer of
// an overlay. Whatever is shown, the credential deny-list (deny.go)
// is never: a configured path that touches it is refused, and every
// deny-listed path below a shown directory is masked.
//
// The package only decides; the daemon renders the scrubbed copies, leases
// the cache layers and builds the sandbox's mounts from a View.
package homeview
