#!/usr/bin/env bash
# Release build of tandem: static linux binaries with the version and commit
# stamped into `tandem --version`, for each architecture the bare binary
# (tandem-V-linux-ARCH) and a tarball (tandem-V-linux-ARCH.tar.gz: binary,
# man page, systemd unit, license, changelog), and a SHA256SUMS file.
#
# Usage: docs/deploy/release.sh [--version V] [--arch "amd64 arm64"] [--out DIR]
#   --version  release number (default: main.version in cmd/tandem/main.go)
#   --arch     GOARCH list (default: amd64 arm64)
#   --out      output directory (default: dist/ at the repository root; earlier
#              tandem-* files and SHA256SUMS in it are replaced)
#
# The commit stamped is `git rev-parse --short=12 HEAD`, with "-dirty" when
# the tree has uncommitted changes ("unknown" outside a git checkout). The
# build is reproducible for a given commit and Go version: -trimpath, no
# build ID, and tarballs with fixed owners, order and times.
#
# Check a download with `sha256sum -c SHA256SUMS`.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"

version=""
arches="amd64 arm64"
out="$root/dist"
while (($#)); do
	case "$1" in
	--version) version="$2"; shift 2 ;;
	--arch) arches="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	-h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
if [ -z "$version" ]; then
	version="$(sed -n 's/^var version = "\(.*\)"$/\1/p' cmd/tandem/main.go)"
fi
if [ -z "$version" ]; then
	echo "release.sh: cannot read main.version from cmd/tandem/main.go; give --version" >&2
	exit 1
fi
case "$version" in *[!A-Za-z0-9.+-]*)
	echo "release.sh: version $version: only letters, digits and . + - allowed" >&2; exit 2 ;;
esac

commit=unknown
if git rev-parse --git-dir >/dev/null 2>&1; then
	commit="$(git rev-parse --short=12 HEAD)"
	if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
		commit="$commit-dirty"
	fi
fi
# The commit's own time, so that a rebuild of the same commit gives the same bytes.
mtime="$(git log -1 --format=%cI 2>/dev/null || echo 2026-01-01T00:00:00Z)"

mkdir -p "$out"
# Remove an earlier release's files only, never anything else in --out.
rm -rf "$out"/tandem-* "$out/SHA256SUMS"
for arch in $arches; do
	name="tandem-$version-linux-$arch"
	stage="$out/$name"
	mkdir -p "$stage"
	echo "building $name (commit $commit)"
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath \
		-ldflags "-s -w -buildid= -X main.version=$version -X main.commit=$commit" \
		-o "$stage/tandem" ./cmd/tandem
	cp LICENSE CHANGELOG.md docs/tandem.1 docs/deploy/tandem.service docs/deploy/tandem-memory.mount docs/deploy/tandem-warm-restart.conf "$stage/"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
		-C "$out" -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
	mv "$stage/tandem" "$out/$name.tandem"
	rm -rf "$stage"
	mv "$out/$name.tandem" "$out/$name" # the bare binary too, for images and quick installs
done
(cd "$out" && sha256sum -- tandem-* >SHA256SUMS)
echo "release $version ($commit) in $out:"
cat "$out/SHA256SUMS"
