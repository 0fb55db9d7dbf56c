#!/usr/bin/env bash
# Install the Debian packages contextd, its build and its tests need, skipping the
# ones already there. Go itself is assumed (go.mod names the version).
set -euo pipefail

# systemd + dbus-user-session: the user manager and user bus contextd runs under.
# gcc, libc6-dev, pkg-config, libseccomp-dev: cgo build of the seccomp layer
# (libseccomp-golang). util-linux (unshare, nsenter, setpriv), passwd (useradd),
# procps (pgrep, ps): the tests and the e2e suite's user manager harness.
# bubblewrap: the baseline of the sandbox benchmark. git: version stamping.
# ca-certificates: the Go module proxy.
pkgs=(systemd dbus-user-session gcc libc6-dev pkg-config libseccomp-dev util-linux passwd procps bubblewrap git ca-certificates)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
