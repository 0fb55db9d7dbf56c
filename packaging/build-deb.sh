#!/usr/bin/env bash
# Build dist/contextd_<version>-<revision>_<arch>.deb from the programs `make deb`
# built into $DIST/build/bin (with the Makefile's LDFLAGS, VERSION=$DEB_VERSION):
#   1. packaging/gen writes the package tree (units, man pages, completions,
#      reference profiles, copyright, changelog) from the code's own definitions;
#   2. dpkg-shlibdeps says which shared libraries the programs need;
#   3. nfpm builds the package from packaging/nfpm.yaml;
#   4. lintian checks it (fails on errors; LINTIAN= skips it).
# Run it through `make deb`, which sets the variables below.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${GO:=go}" "${DIST:=dist}" "${DEB_REVISION:=1}" "${LINTIAN=lintian}"
: "${NFPM:=$("$GO" env GOPATH)/bin/nfpm}"
[[ -n ${DEB_VERSION:-} ]] || { echo "build-deb: DEB_VERSION is not set (run make deb)" >&2; exit 64; }

build=$DIST/build
stage=$build/stage
bin=$build/bin
# Reproducible: every date in the package is the commit's.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH

rm -rf "$stage"
describe=$(git describe --tags --always --dirty 2>/dev/null || true)
"$GO" run ./packaging/gen stage -out "$stage" -version "$DEB_VERSION" -revision "$DEB_REVISION" \
	-bin "$bin" -describe "$describe"

# The Depends on shared libraries, as dpkg-shlibdeps reads them from the ELF
# files (it wants a debian/control to run in).
shlibdir=$(mktemp -d)
trap 'rm -rf "$shlibdir"' EXIT
mkdir "$shlibdir/debian"
printf 'Source: contextd\n\nPackage: contextd\nArchitecture: any\n' >"$shlibdir/debian/control"
elves=()
for f in "$stage"/usr/bin/*; do
	# Static programs (the proxy) need no library.
	if readelf --dynamic "$f" | grep -q '(NEEDED)'; then
		elves+=("-e$(realpath "$f")")
	fi
done
# (Its warning that the files are not yet where the package puts them is moot.)
shlibs=$(cd "$shlibdir" && dpkg-shlibdeps -O "${elves[@]}" 2>debian/stderr) || {
	cat "$shlibdir/debian/stderr" >&2
	exit 70
}
DEB_SHLIBS_DEPENDS=${shlibs#shlibs:Depends=}
[[ $DEB_SHLIBS_DEPENDS == *libc6* ]] || { echo "build-deb: dpkg-shlibdeps found no libc6 dependency: $shlibs" >&2; exit 70; }

DEB_ARCH=$("$GO" env GOARCH)
export DEB_VERSION DEB_REVISION DEB_ARCH DEB_STAGE=$stage DEB_SHLIBS_DEPENDS
mkdir -p "$DIST"
deb=$DIST/contextd_${DEB_VERSION}-${DEB_REVISION}_$(dpkg --print-architecture).deb
rm -f "$deb"
"$NFPM" package --config packaging/nfpm.yaml --packager deb --target "$deb"
echo "build-deb: $deb ($(du -k "$deb" | cut -f1) KiB; Depends: $(dpkg-deb -f "$deb" Depends))"

if [[ -n $LINTIAN ]]; then
	if command -v "$LINTIAN" >/dev/null; then
		"$LINTIAN" --fail-on error "$deb"
		echo "build-deb: lintian found no errors"
	else
		echo "build-deb: $LINTIAN is not installed; not checked (make deps installs it)" >&2
	fi
fi
