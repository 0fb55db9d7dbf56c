#!/usr/bin/env bash
# Build a flat apt repository in $DIST/apt from the packages in $DIST
# (contextd_*.deb): Packages, Packages.gz, Release with their hashes, signed as
# Release.gpg and InRelease with a key made here on first use and kept in
# $DIST/apt-key (no passphrase: it signs builds of this checkout, nothing more).
# The public key is $DIST/apt/contextd-archive-keyring.gpg, for signed-by=.
# Run it through `make apt-repo`.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${DIST:=dist}"
repo=$DIST/apt
keydir=$DIST/apt-key

shopt -s nullglob
debs=("$DIST"/contextd_*.deb)
((${#debs[@]})) || { echo "apt-repo: no contextd_*.deb in $DIST (run make deb)" >&2; exit 66; }

mkdir -p "$repo"
# apt's file: method reads as the unprivileged _apt user where it can.
chmod 0755 "$DIST" "$repo"
cp -p "${debs[@]}" "$repo/"

export GNUPGHOME
GNUPGHOME=$(realpath -m "$keydir")
trap 'gpgconf --kill gpg-agent 2>/dev/null || true' EXIT
if [[ ! -s $GNUPGHOME/fingerprint ]]; then
	rm -rf "$GNUPGHOME"
	mkdir -p "$(dirname "$GNUPGHOME")"
	mkdir -m 0700 "$GNUPGHOME"
	gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
		--quick-generate-key "contextd archive key (local build) <dev@contextd.invalid>" ed25519 sign never
	gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" { print $10; exit }' >"$GNUPGHOME/fingerprint"
	echo "apt-repo: new signing key $(cat "$GNUPGHOME/fingerprint") in $keydir"
fi
fpr=$(cat "$GNUPGHOME/fingerprint")
gpg --batch --yes --export --output "$repo/contextd-archive-keyring.gpg" "$fpr"

archs=$(for d in "$repo"/contextd_*.deb; do dpkg-deb -f "$d" Architecture; done | sort -u | tr '\n' ' ')
tmp=$(mktemp)
(
	cd "$repo"
	rm -f Packages Packages.gz Release Release.gpg InRelease
	apt-ftparchive packages . >Packages
	gzip -9nk Packages
	apt-ftparchive \
		-o APT::FTPArchive::Release::Origin=contextd \
		-o APT::FTPArchive::Release::Label=contextd \
		-o APT::FTPArchive::Release::Suite=stable \
		-o APT::FTPArchive::Release::Codename=contextd \
		-o "APT::FTPArchive::Release::Architectures=${archs% }" \
		-o "APT::FTPArchive::Release::Description=contextd packages built from a local checkout" \
		release . >"$tmp"
)
mv "$tmp" "$repo/Release"
chmod 0644 "$repo"/*
gpg --batch --yes --local-user "$fpr" --armor --detach-sign --output "$repo/Release.gpg" "$repo/Release"
gpg --batch --yes --local-user "$fpr" --clearsign --output "$repo/InRelease" "$repo/Release"

echo "apt-repo: $repo ($(grep -c '^Package:' "$repo/Packages") package(s)); use it with:"
echo "  deb [signed-by=/usr/share/keyrings/contextd-archive-keyring.gpg] file:$(realpath "$repo") ./"
