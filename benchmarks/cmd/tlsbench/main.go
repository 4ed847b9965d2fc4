// Command tlsbench measures what TLS costs a memcached-protocol server
// (issue #27), side by side in one run against one server process:
//
//   - get-heavy load (90% get, 10% set, uniform keys, 32-byte values, one
//     request in flight per connection) over TLS and over plaintext, at each
//     of -conns, reporting requests/s and requests per server CPU-second;
//   - full TLS handshakes per second, with and without session resumption
//     (the server must allow it: tandem and memcached -o ssl_session_cache).
//
// The server is given by its TLS and plaintext addresses (tandem: -Z with a
// notls: listener) and its pid, for CPU time from /proc.
//
//	go run -C benchmarks ./cmd/tlsbench -tls 127.0.0.1:11211 -plain 127.0.0.1:11212 -ca ca.pem -pid 1234
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tlsbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		tlsAddr   = fs.String("tls", "", "the server's TLS address")
		plainAddr = fs.String("plain", "", "the server's plaintext address (empty: skip the plaintext load)")
		caFile    = fs.String("ca", "", "PEM CA that signed the server's certificate")
		pid       = fs.Int("pid", 0, "the server's pid, for its CPU time (0: not reported)")
		conns     = fs.String("conns", "50", "connection counts, comma-separated")
		duration  = fs.Duration("duration", 10*time.Second, "length of each load phase")
		hsDur     = fs.Duration("handshake-duration", 5*time.Second, "length of each handshake phase (0: skip)")
		hsConc    = fs.Int("handshake-conns", 8, "concurrent handshaking clients")
		keys      = fs.Int("keys", 10000, "key space")
		label     = fs.String("label", "", "a label for the report lines (server and mode)")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(stderr, "tlsbench:", err)
		return 2
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		fmt.Fprintln(stderr, "tlsbench: no certificate in", *caFile)
		return 2
	}
	base := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if err := preload(*tlsAddr, base, *keys); err != nil {
		fmt.Fprintln(stderr, "tlsbench: preload:", err)
		return 1
	}
	fmt.Fprintf(stdout, "| server | transport | conns | req/s | server CPU s | req per CPU-s | errors |\n|---|---|---|---|---|---|---|\n")
	for _, f := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintln(stderr, "tlsbench: bad -conns", f)
			return 2
		}
		phases := []struct {
			name string
			dial func() (net.Conn, error)
		}{{"tls", func() (net.Conn, error) { return tls.Dial("tcp", *tlsAddr, base) }}}
		if *plainAddr != "" {
			phases = append(phases, struct {
				name string
				dial func() (net.Conn, error)
			}{"plain", func() (net.Conn, error) { return net.Dial("tcp", *plainAddr) }})
		}
		for _, ph := range phases {
			r := load(ph.dial, n, *duration, *keys, *pid)
			fmt.Fprintf(stdout, "| %s | %s | %d | %.0f | %.2f | %.0f | %d |\n", *label, ph.name, n, r.rate, r.cpu, r.perCPU, r.errors)
		}
	}
	if *hsDur > 0 {
		fmt.Fprintf(stdout, "\n| server | handshakes | per second | resumed | server CPU s | errors |\n|---|---|---|---|---|---|\n")
		for _, resume := range []bool{false, true} {
			r := handshakes(*tlsAddr, base, resume, *hsConc, *hsDur, *pid)
			kind := "full"
			if resume {
				kind = "with resumption"
			}
			fmt.Fprintf(stdout, "| %s | %s | %.0f | %d of %d | %.2f | %d |\n", *label, kind, r.rate, r.resumed, r.count, r.cpu, r.errors)
		}
	}
	return 0
}

// preload sets every key once.
func preload(addr string, cfg *tls.Config, keys int) error {
	nc, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	c := loadgen.NewConn(nc, 10*time.Second)
	defer c.Close()
	val := make([]byte, 32)
	for i := 0; i < keys; i++ {
		if _, err := c.Set(key(i), val); err != nil {
			return err
		}
	}
	return nil
}

func key(i int) []byte { return []byte("tlsbench:" + strconv.Itoa(i)) }

type loadResult struct {
	rate, cpu, perCPU float64
	errors            int64
}

// load runs n closed-loop connections for d: 90% get, 10% set.
func load(dial func() (net.Conn, error), n int, d time.Duration, keys, pid int) loadResult {
	var done, errs atomic.Int64
	var wg sync.WaitGroup
	cs := make([]*loadgen.Conn, n)
	for i := range cs {
		nc, err := dial()
		if err != nil {
			errs.Add(1)
			continue
		}
		cs[i] = loadgen.NewConn(nc, 10*time.Second)
	}
	cpu0 := cpuSeconds(pid)
	start := time.Now()
	stop := start.Add(d)
	for i, c := range cs {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(i), 27))
			val, dst := make([]byte, 32), make([]byte, 0, 64)
			for time.Now().Before(stop) {
				k := key(rng.IntN(keys))
				var err error
				if rng.IntN(10) == 0 {
					_, err = c.Set(k, val)
				} else {
					_, err = c.Get(k, dst)
				}
				if err != nil {
					errs.Add(1)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	cpu := cpuSeconds(pid) - cpu0
	r := loadResult{rate: float64(done.Load()) / el, cpu: cpu, errors: errs.Load()}
	if cpu > 0 {
		r.perCPU = float64(done.Load()) / cpu
	}
	return r
}

type hsResult struct {
	rate           float64
	count, resumed int64
	cpu            float64
	errors         int64
}

// handshakes opens and closes TLS connections for d from conc clients, each
// with its own session cache when resume is set.
func handshakes(addr string, base *tls.Config, resume bool, conc int, d time.Duration, pid int) hsResult {
	var count, resumed, errs atomic.Int64
	var wg sync.WaitGroup
	cpu0 := cpuSeconds(pid)
	start := time.Now()
	stop := start.Add(d)
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := base.Clone()
			if resume {
				cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			}
			for time.Now().Before(stop) {
				c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
				if err != nil {
					errs.Add(1)
					continue
				}
				// A round trip, so that a TLS 1.3 session ticket (sent after
				// the handshake) arrives before the close.
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(c, "version\r\n"); err == nil {
					buf := make([]byte, 64)
					_, err = c.Read(buf)
					if err != nil && !errors.Is(err, io.EOF) {
						errs.Add(1)
					}
				}
				if c.ConnectionState().DidResume {
					resumed.Add(1)
				}
				count.Add(1)
				c.Close()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	return hsResult{rate: float64(count.Load()) / el, count: count.Load(), resumed: resumed.Load(), cpu: cpuSeconds(pid) - cpu0, errors: errs.Load()}
}

// cpuSeconds is the user+system CPU time of pid from /proc; 0 without one.
func cpuSeconds(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}
