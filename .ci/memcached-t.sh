#!/usr/bin/env bash
# Runs memcached 1.6.45's own Perl tests (t/*.t with t/lib/MemcachedTest.pm)
# against tandem in each mode (docs/testing.md, "memcached's own t/ files").
# The files come from Debian's archive (the upstream tarball Debian ships,
# checked against the sha256 of sid's Sources index); nothing of memcached is
# built and nothing is kept in this repository: MemcachedTest.pm connects to
# T_MEMD_USE_DAEMON=host:port instead of starting memcached-debug. A fresh
# tandem serves each file in each mode (the files reuse keys, some send quit).
#
#   .ci/memcached-t.sh                 # the files in $files below, every mode
#   .ci/memcached-t.sh t/cas.t         # chosen files
#   MODES=pool .ci/memcached-t.sh      # chosen modes
#   SERVER='/path/memcached -U 0' .ci/memcached-t.sh  # a reference server instead of tandem
#   MEMCACHED_TARBALL=/tmp/memcached_1.6.45.orig.tar.xz .ci/memcached-t.sh  # no download
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

version=1.6.45
url="http://deb.debian.org/debian/pool/main/m/memcached/memcached_${version}.orig.tar.xz"
sha256=c383a2ad8f973b627c3de472702f46ee33b402750de4fd2d25cef65a00140110
# The files that fit an external server: no server of their own with special
# options (t/flush-all.t's last two cases start one with -F), no debug build
# (t/expirations.t moves the clock with debugtime). metaget.t's extstore part
# runs only where the server's -h offers ext_path (tandem's does not).
# Also left out: t/binary.t expects stats settings' domain_socket set whenever
# the build offers -s, which a server listening on TCP does not have (5,584
# of its 5,585 cases pass; memcached 1.6.45 fails the same one when run this
# way), and t/issue_14.t compares total_malloced, memcached's slab allocator's
# own figure, to the byte.
files=(t/getset.t t/incrdecr.t t/noreply.t t/flags.t t/metaget.t t/cas.t
	t/binary-get.t t/bogus-commands.t t/getandtouch.t t/touch.t t/quit.t
	t/malicious-commands.t t/multiversioning.t t/strtol-testing.t
	t/issue_3.t t/issue_41.t t/issue_68.t t/issue_70.t t/issue_104.t t/issue_108.t
	t/issue_152.t t/issue_192.t)
if (($#)); then
	files=("$@")
fi
read -r -a modes <<<"${MODES:-pool inline goroutine}"

for tool in perl prove curl sha256sum tar xz; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "memcached-t: $tool is missing (needs perl, curl, xz-utils)" >&2
		exit 1
	fi
done

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

tarball="${MEMCACHED_TARBALL:-}"
if [ -z "$tarball" ]; then
	tarball="$work/memcached_${version}.orig.tar.xz"
	if ! curl -sSfL --retry 3 --max-time 120 -o "$tarball" "$url"; then
		echo "memcached-t: FAILED to download $url (memcached ${version}'s t/ files); not a tandem failure, but CI needs it" >&2
		exit 1
	fi
fi
if ! echo "$sha256  $tarball" | sha256sum -c --quiet -; then
	echo "memcached-t: $tarball does not have the expected sha256 $sha256" >&2
	exit 1
fi
tar -xJf "$tarball" -C "$work" "memcached-${version}/t"
src="$work/memcached-${version}"

server=()
if [ -z "${SERVER:-}" ]; then
	go build -o "$work/tandem" ./cmd/tandem
	# MemcachedTest.pm asks $builddir/memcached-debug for its -h output
	# (what the build supports) before it looks at T_MEMD_USE_DAEMON: the
	# server under test answers it.
	ln -s "$work/tandem" "$src/memcached-debug"
else
	read -r -a server <<<"$SERVER"
	# memcached's -h without its extstore options: the files' extstore
	# parts start a server of their own, which an external one cannot be.
	printf '#!/bin/sh\n%q -h | grep -v ext_path\n' "$(command -v "${server[0]}")" >"$src/memcached-debug"
	chmod +x "$src/memcached-debug"
	modes=(reference)
fi

port=22611
failed=()
for mode in "${modes[@]}"; do
	for f in "${files[@]}"; do
		if [ "$mode" = reference ]; then
			"${server[@]}" -p "$port" -l 127.0.0.1 >"$work/server.log" 2>&1 &
		else
			"$work/tandem" --mode "$mode" -p "$port" -l 127.0.0.1 >"$work/server.log" 2>&1 &
		fi
		pid=$!
		pids=("$pid")
		up=
		for _ in $(seq 100); do
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then up=1; break; fi
			sleep 0.1
		done
		if [ -z "$up" ]; then
			echo "memcached-t: the server ($mode) did not listen on 127.0.0.1:$port" >&2
			cat "$work/server.log" >&2
			exit 1
		fi
		echo "-- $mode $f"
		if ! (cd "$src" && T_MEMD_USE_DAEMON="127.0.0.1:$port" timeout 300 prove "$f"); then
			failed+=("$mode $f")
		fi
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		pids=()
	done
done
if ((${#failed[@]})); then
	echo "memcached-t: memcached ${version}'s t/ files failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "memcached-t: memcached ${version}'s ${files[*]} passed in ${modes[*]}"
