#!/bin/bash
# sweep.sh: the seeds' Java client sweep (SizeSweep.java, spymemcached)
# against tandem's modes and memcached, alternating, each on a fresh server
# on 127.0.0.1. Prints one line per run: target, threads, total ms.
#
#   benchmarks/java/sweep.sh TANDEM_BIN [REPS] [THREADS...]
#
# Needs a JDK and spymemcached (Debian: apt-get install -y
# default-jdk-headless libspymemcached-java) and memcached.
set -euo pipefail
bin=${1:?usage: sweep.sh TANDEM_BIN [REPS] [THREADS...]}
reps=${2:-3}
shift
[ $# -gt 0 ] && shift
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 4)
jar=/usr/share/java/spymemcached.jar
here=$(cd "$(dirname "$0")" && pwd)
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac -d "$classes" -cp "$jar" "$here/SizeSweep.java"

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }

targets=("memcached" "pool" "pool --worker-writes" "inline" "goroutine")
for rep in $(seq "$reps"); do
	for t in "${threads[@]}"; do
		for target in "${targets[@]}"; do
			p=$(port)
			if [ "$target" = memcached ]; then
				memcached -p "$p" -l 127.0.0.1 -t 2 -m 1024 -c 4096 -U 0 -u root & pid=$!
			else
				# shellcheck disable=SC2086
				"$bin" -p "$p" -l 127.0.0.1 -t 2 -m 1024 -c 4096 --mode $target 2>/dev/null & pid=$!
			fi
			wait_port "$p"
			total=$(java -cp "$jar:$classes" SizeSweep "127.0.0.1:$p" "$t" 2>/dev/null | sed -n 's/^Total: \([0-9]*\) ms/\1/p')
			kill "$pid"; wait "$pid" 2>/dev/null || true
			echo "rep $rep threads $t target ${target// /} total_ms $total"
		done
	done
done
