#!/usr/bin/env bash
# The TLS cost benchmark of issue #27, side by side in one run: tandem in each
# mode and memcached 1.6.18 (Debian's build has TLS), all with -t 2, each
# serving a TLS listener and a notls: one; tlsbench drives get-heavy load at
# 50 and 200 connections over both, then full handshakes with and without
# session resumption. Certificates are made here, in a temporary directory.
# Hold the machine's benchmark lock: flock /work/bench.lock benchmarks/cmd/tlsbench/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/tandem" ./cmd/tandem
(cd benchmarks && go build -o "$dir/tlsbench" ./cmd/tlsbench)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
	-keyout "$dir/key.pem" -out "$dir/cert.pem" -subj /CN=tlsbench -addext subjectAltName=IP:127.0.0.1 2>/dev/null
tls="ssl_chain_cert=$dir/cert.pem,ssl_key=$dir/key.pem,ssl_session_cache"
conns=${CONNS:-50,200}
dur=${DURATION:-6s}

bench() { # label pid tls-port plain-port
	sleep 0.5
	"$dir/tlsbench" -tls "127.0.0.1:$3" -plain "127.0.0.1:$4" -ca "$dir/cert.pem" -pid "$2" \
		-conns "$conns" -duration "$dur" -handshake-duration 4s -label "$1"
	kill "$2"
	wait "$2" 2>/dev/null || true
}
for mode in pool inline goroutine; do
	"$dir/tandem" --mode "$mode" -t 2 -m 256 -Z -o "$tls" -p 23001 -l 127.0.0.1,notls:127.0.0.1:23002 --log-level warn 2>/dev/null &
	bench "tandem $mode" $! 23001 23002
done
if command -v memcached >/dev/null; then
	user=(); [ "$(id -u)" = 0 ] && user=(-u root)
	memcached "${user[@]}" -t 2 -m 256 -U 0 -Z -o "$tls" -p 23003 -l 127.0.0.1,notls:127.0.0.1:23004 &
	bench "memcached $(memcached -V | cut -d' ' -f2)" $! 23003 23004
fi
