#!/usr/bin/env bash
# Build tandem's container image (docs/deploy/Containerfile) with podman,
# stamping the commit (and a version, if given) into `tandem --version`.
#
# Usage: docs/deploy/image.sh [--tag NAME] [--version V] [--platform P] [--offline]
#   --tag      image name (default: localhost/tandem:VERSION, or :latest)
#   --platform the image's platform, e.g. linux/arm64 (default: this machine's;
#              the binary is cross-compiled, nothing is emulated)
#   --version  release number to stamp (default: main.version of the source)
#   --offline  build without pulling anything: the build stage runs on a
#              local image made from this machine's Go toolchain
#              ($(go env GOROOT)), /bin/sh with its libraries, and a module
#              cache filled by `go mod download` (from the local cache, else
#              the Go module proxy); the final stage is FROM scratch, so no
#              registry is needed at all. The builder image is kept, tagged
#              localhost/tandem-build-go:GOVERSION-SUMHASH, and reused.
#
# The build's RUN steps (go mod download, go build) run in chroot isolation,
# without a container runtime, where the host's cgroups are v1 or hybrid
# (crun refuses "cgroups in hybrid mode", as on the project's CI machines):
# the script sets BUILDAH_ISOLATION=chroot then, unless it is set already.
# Set BUILDAH_ISOLATION=chroot yourself where podman cannot start containers
# for another reason (crun refusing setrlimit).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$PATH:/usr/local/go/bin"

tag=""
version=""
offline=0
platform=""
while (($#)); do
	case "$1" in
	--tag) tag="$2"; shift 2 ;;
	--version) version="$2"; shift 2 ;;
	--offline) offline=1; shift ;;
	--platform) platform="$2"; shift 2 ;;
	-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
tag="${tag:-localhost/tandem:${version:-latest}}"
commit=""
if git rev-parse --git-dir >/dev/null 2>&1; then
	commit="$(git rev-parse --short=12 HEAD)"
	[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit-dirty"
fi

args=(--build-arg "COMMIT=$commit" --build-arg "VERSION=$version")
if [ -n "$platform" ]; then
	# podman 4.3 leaves BUILDPLATFORM unset once --platform is given: name the
	# build machine's platform, which the build stage runs on.
	args+=(--platform "$platform" --build-arg "BUILDPLATFORM=$(podman info --format '{{.Host.OS}}/{{.Host.Arch}}')")
fi
if ((offline)); then
	goversion="$(go env GOVERSION)"
	sumhash="$(cat go.mod go.sum | sha256sum | cut -c1-12)"
	builder="localhost/tandem-build-go:$goversion-$sumhash"
	if ! podman image exists "$builder"; then
		echo "image.sh: making $builder from $(go env GOROOT) and the module cache"
		rootfs="$(mktemp -d)"
		trap 'chmod -R u+w "$rootfs" 2>/dev/null; rm -rf "$rootfs"' EXIT
		mkdir -p "$rootfs/usr/local" "$rootfs/tmp" "$rootfs/go" "$rootfs/bin"
		cp -a "$(go env GOROOT)" "$rootfs/usr/local/go"
		# /bin/sh for the RUN steps, with the libraries it links.
		cp -L /bin/sh "$rootfs/bin/sh"
		for lib in $(ldd /bin/sh | grep -o '/[^ ]*'); do
			mkdir -p "$rootfs$(dirname "$lib")"
			cp -L "$lib" "$rootfs$lib"
		done
		# The modules go.sum names, from the local cache when it has them.
		GOFLAGS=-modcacherw GOMODCACHE="$rootfs/go/pkg/mod" \
			GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" \
			GOSUMDB=off go mod download
		chmod 1777 "$rootfs/tmp"
		tar -C "$rootfs" -cf - . | podman import \
			--change 'ENV PATH=/usr/local/go/bin:/go/bin:/bin' \
			--change 'ENV GOPATH=/go' \
			--change 'ENV GOCACHE=/tmp/go-build' \
			--change 'ENV GOPROXY=off' \
			--change 'ENV GOTOOLCHAIN=local' \
			- "$builder" >/dev/null
	fi
	args+=(--build-arg "GO_IMAGE=$builder" --pull=never)
fi
if [ -z "${BUILDAH_ISOLATION:-}" ] && [ "$(uname -s)" = Linux ] && [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
	# cgroups v1 or hybrid: crun cannot run the RUN steps.
	echo "image.sh: cgroups v1 or hybrid here: building with BUILDAH_ISOLATION=chroot"
	export BUILDAH_ISOLATION=chroot
fi
podman build -f docs/deploy/Containerfile -t "$tag" "${args[@]}" .
echo "image.sh: built $tag (commit ${commit:-unknown})"
