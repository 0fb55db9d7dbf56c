#!/usr/bin/env bash
# Install the Debian packages contextd, its build and its tests need, skipping the
# ones already there. Go itself is assumed (go.mod names the version).
set -euo pipefail

# systemd + dbus-user-session: the user manager and user bus contextd runs under.
# gcc, libc6-dev, pkg-config, libseccomp-dev: cgo build of the seccomp layer
# (libseccomp-golang). util-linux (unshare, nsenter, setpriv), passwd (useradd),
# procps (pgrep, ps): the tests and the e2e suite's user manager harness.
# bubblewrap: the baseline of the sandbox benchmark. git: version stamping.
# ca-certificates: the Go module proxy. tmux: the e2e test of `contextd inspect`
# drives its terminal UI in a tmux pane. python3: the e2e suite runs a real
# unittest suite for its logs (Debian's, at /usr/bin/python3, which the test
# user and the sandbox both see). openssl, gnutls-bin (certtool): the egress
# CA's name constraints are checked with both TLS stacks a sandboxed client may
# use (curl and git on Debian go through GnuTLS, Node and Python through OpenSSL).
pkgs=(systemd dbus-user-session gcc libc6-dev pkg-config libseccomp-dev util-linux passwd procps bubblewrap git ca-certificates tmux python3 openssl gnutls-bin)
# The Debian package and its apt repository (make deb apt-repo, e2e TestApt):
# dpkg-dev (dpkg-shlibdeps, dpkg-parsechangelog; binutils' readelf), lintian,
# apt-utils (apt-ftparchive), gnupg (signing key, gpgv), gzip; and what the
# packaging generator's tests render and complete with: man-db (man -l),
# bash-completion, zsh, fish. (nfpm comes from the Go module proxy: make nfpm.)
pkgs+=(dpkg-dev binutils lintian apt-utils gnupg gpgv gzip man-db bash-completion zsh fish)
# protobuf-compiler (protoc): `make generate` regenerates the gRPC code of
# wire/ and wire/toolplugin/ with it; protobuf-compiler-grpc
# (grpc_python_plugin) makes the Python modules of examples/tools/logscan-py.
# The generated code is committed; the examples' tests check it is current.
# python3-grpcio, python3-protobuf: logscan-py, the example tool in Python,
# runs on them, and its tests start it.
pkgs+=(protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs, npm: the e2e suite drives `contextd-proxy mcp` with the official MCP
# TypeScript SDK client under Node (e2e/mcpjs, `npm ci`). Checked by command,
# not by package: a Node that came from elsewhere (NodeSource bundles npm in
# its nodejs package) serves as well, and Debian's npm would conflict with it.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]} == 0)); then
	echo "deps: all present (${pkgs[*]})"
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "deps: missing ${missing[*]}, and this is not a Debian/Ubuntu system: install them with your package manager" >&2
	exit 69
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 77; }
	sudo=(sudo)
fi
echo "deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
