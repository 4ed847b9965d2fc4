package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Clients that pipeline requests and never read their replies must cost
// the server a bounded amount of memory and must not slow everyone else
// down: the server stops running their requests once their unsent replies
// pass a high-water mark and stops reading them, as memcached does. These
// tests measure the real binary's peak RSS from /proc and a probe client's
// errors; the latency targets are measured by the benchmark harness (see
// docs/benchmarks.md, scenario hostile), not asserted here.

// TestNonReadingClients runs 40, then 400, connections that pipeline gets
// of a 4 KB value without reading, for a few seconds each, against every
// variant in turn (one at a time: the clients alone load both cores).
func TestNonReadingClients(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: needs a few seconds per variant")
	}
	bin := plainBinary(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for _, tc := range []struct {
				clients int
				maxRSS  int64
			}{
				{40, 64 << 20},   // issue #17: <= 64 MB at -m 64
				{400, 128 << 20}, // and <= 128 MB
			} {
				args := append([]string{"-m", "64", "-c", "4096"}, v.extra...)
				s := startServerBin(t, bin, v.mode, args...)
				res := hostileRun(t, s.Addr, s.pid(), tc.clients, 3*time.Second, 0)
				t.Logf("%d non-reading clients: peak RSS %d MiB, probe %d gets, %d errors, p99 %v, max %v; server closed %d",
					tc.clients, res.peakRSS>>20, res.probes, res.errors, res.p99, res.maxLatency, res.closed)
				if res.peakRSS > tc.maxRSS {
					t.Errorf("%d non-reading clients: peak RSS %d MiB, want <= %d MiB", tc.clients, res.peakRSS>>20, tc.maxRSS>>20)
				}
				if res.errors > 0 || res.probes == 0 {
					t.Errorf("%d non-reading clients: the probe got %d errors in %d gets", tc.clients, res.errors, res.probes)
				}
				if res.closed > 0 {
					t.Errorf("%d non-reading clients: the server closed %d of them; it should stop reading them instead", tc.clients, res.closed)
				}
				if !s.alive() {
					t.Fatalf("server exited:\n%s", s.Log())
				}
				s.Kill()
			}
		})
	}
}

type hostileResult struct {
	peakRSS    int64
	probes     int
	errors     int
	maxLatency time.Duration
	p99        time.Duration // of the probe's round trips
	closed     int64
	kernel     tcpKernel // what the kernel's TCP went through meanwhile, machine-wide
}

// tcpKernel is the machine's TCP memory during a run, from /proc/net: the
// peak of the pages TCP's buffers held (sockstat's "mem"), the thresholds
// above which the kernel is under memory pressure and refuses buffer memory
// (tcp_mem's second and third figures; pages are 4 KiB on the machines this
// runs on), and how often it entered that pressure (TcpExt
// TCPMemoryPressures) and dropped a received segment for want of buffer
// memory (TCPRcvQDrop) meanwhile.
type tcpKernel struct {
	ok                               bool
	peakPages, pressureAt, hardLimit int64
	pressures, rcvQDrops             int64
}

func (k tcpKernel) String() string {
	if !k.ok {
		return "kernel TCP memory unknown"
	}
	return fmt.Sprintf("kernel TCP memory peak %d MiB (pressure above %d MiB, limit %d MiB), %d pressure entries, %d receive-queue drops",
		k.peakPages*4096>>20, k.pressureAt*4096>>20, k.hardLimit*4096>>20, k.pressures, k.rcvQDrops)
}

// tcpMemPages reads the pages TCP's buffers hold now, machine-wide.
func tcpMemPages() (int64, bool) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "TCP:" {
			for i := 1; i+1 < len(f); i++ {
				if f[i] == "mem" {
					n, err := strconv.ParseInt(f[i+1], 10, 64)
					return n, err == nil
				}
			}
		}
	}
	return 0, false
}

// tcpExt reads TcpExt counters from /proc/net/netstat.
func tcpExt(names ...string) ([]int64, bool) {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return nil, false
	}
	var head []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TcpExt:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		out := make([]int64, len(names))
		for i, n := range names {
			j := slices.Index(head, n)
			if j < 0 || j >= len(f) {
				return nil, false
			}
			out[i], _ = strconv.ParseInt(f[j], 10, 64)
		}
		return out, true
	}
	return nil, false
}

// hostileRun stores a 4 KB value, opens clients connections that write
// "get big" over and over and never read, and meanwhile has a probe
// connection get a small value every 20 ms (an error: no complete reply
// within 5 s); then it reads the server's peak RSS. clientBuf, when not 0,
// sets the clients' socket buffers (SO_RCVBUF, SO_SNDBUF) on their side.
func hostileRun(t *testing.T, addr string, pid int, clients int, d time.Duration, clientBuf int) hostileResult {
	t.Helper()
	setup := dialRaw(t, addr)
	val := strings.Repeat("v", 4096)
	writeAll(t, setup, fmt.Sprintf("set big 0 0 %d\r\n%s\r\nset small 0 0 2\r\nok\r\n", len(val), val))
	readUntil(t, setup, "STORED\r\nSTORED\r\n")
	setup.Close()

	var res hostileResult
	var closed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	pipe := []byte(strings.Repeat("get big\r\n", 1000))
	conns := make([]net.Conn, 0, clients)
	for i := 0; i < clients; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if clientBuf > 0 {
			tc := c.(*net.TCPConn)
			_ = tc.SetReadBuffer(clientBuf)
			_ = tc.SetWriteBuffer(clientBuf)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			defer c.Close()
			for {
				_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				_, err := c.Write(pipe)
				select {
				case <-stop:
					return
				default:
				}
				var ne net.Error
				if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
					closed.Add(1) // the server closed or reset it
					return
				}
			}
		}(c)
	}
	ext0, extOK := tcpExt("TCPMemoryPressures", "TCPRcvQDrop")
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_mem"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			res.kernel.pressureAt, _ = strconv.ParseInt(f[1], 10, 64)
			res.kernel.hardLimit, _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	probe := dialRaw(t, addr)
	r := bufio.NewReader(probe)
	const want = "VALUE small 0 2\r\nok\r\nEND\r\n"
	got := make([]byte, len(want))
	var lats []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if pages, ok := tcpMemPages(); ok {
			res.kernel.peakPages = max(res.kernel.peakPages, pages)
		}
		start := time.Now()
		_ = probe.SetDeadline(start.Add(5 * time.Second))
		_, err := io.WriteString(probe, "get small\r\n")
		if err == nil {
			_, err = io.ReadFull(r, got)
		}
		if err != nil || string(got) != want {
			res.errors++
			probe.Close()
			probe = dialRaw(t, addr)
			r = bufio.NewReader(probe)
			continue
		}
		res.probes++
		lat := time.Since(start)
		res.maxLatency = max(res.maxLatency, lat)
		lats = append(lats, lat)
	}
	if len(lats) > 0 {
		slices.Sort(lats)
		res.p99 = lats[len(lats)*99/100]
	}
	if ext1, ok := tcpExt("TCPMemoryPressures", "TCPRcvQDrop"); ok && extOK {
		res.kernel.ok = true
		res.kernel.pressures, res.kernel.rcvQDrops = ext1[0]-ext0[0], ext1[1]-ext0[1]
	}
	probe.Close()
	close(stop)
	wg.Wait()
	hwm, err := readPeakRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	res.peakRSS = hwm
	res.closed = closed.Load()
	return res
}

// TestSlowReaderIsServed pipelines 100,000 gets and reads the replies at
// about 1 MB/s: a client that does read, slowly, is served completely, in
// order, and never closed.
func TestSlowReaderIsServed(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: takes ~4 s per variant")
	}
	forVariants(t, func(t *testing.T, v serverVariant) {
		s := startServer(t, v.mode, v.extra...)
		c := dialRaw(t, s.Addr)
		defer c.Close()
		writeAll(t, c, "set k 0 0 10\r\n0123456789\r\n")
		br := bufio.NewReader(c)
		readUntilReader(t, br, "STORED\r\n")
		const n = 100000
		errc := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c, strings.Repeat("get k\r\nmn\r\n", n))
			errc <- err
		}()
		want := []byte("VALUE k 0 10\r\n0123456789\r\nEND\r\nMN\r\n")
		const rate = 1 << 20 // bytes per second
		buf := make([]byte, 16<<10)
		var pendingBytes []byte
		replies, total := 0, 0
		start := time.Now()
		for replies < n {
			m, err := br.Read(buf)
			if err != nil {
				t.Fatalf("after %d of %d replies: %v", replies, n, err)
			}
			total += m
			pendingBytes = append(pendingBytes, buf[:m]...)
			for len(pendingBytes) >= len(want) {
				if !bytes.Equal(pendingBytes[:len(want)], want) {
					t.Fatalf("reply %d: %q", replies, quote(string(pendingBytes[:len(want)])))
				}
				pendingBytes = pendingBytes[len(want):]
				replies++
			}
			if ahead := time.Duration(float64(total)/rate*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("writing the gets: %v", err)
		}
		// Still open and in sync.
		writeAll(t, c, "version\r\n")
		if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "VERSION ") {
			t.Fatalf("after the replies: %q, %v", line, err)
		}
	})
}

// TestProbeBesideNonReadingClients: a client sending one get at a time
// keeps being answered while 400 connections pipeline gets of a 4 KB value
// and never read: the server does not run connections whose replies cannot
// be written ahead of one that reads (issue #25; a probe round trip is ~0.1
// ms on an idle server).
//
// What it asserts is starvation, not speed (speed is measured side by side
// in the benchmark harness, scenario hostile: docs/benchmarks.md): every
// probe answered, and the probe's longest wait within 3x memcached's plus
// 150 ms, memcached run just before on the same machine and scenario; 1 s
// when memcached is not installed. It used to assert a p99 under 50 ms,
// which failed about one run in three with no fault of the server's: on
// this 2-core machine, shared, memcached's own p99 ranged 12-89 ms and its
// longest wait 18-170 ms (19 runs), two runs of it side by side differing
// up to 4.5x (p99) and 7.4x (longest wait). Nor did the p99 see the fault
// it was there for: inline mode's loops went 0.2-1.3 s without polling
// their sockets while the kernel filled the 400 sockets (the wake-ups ran
// in one pass of gnet's task queue, fixed in reactor/yield.go), a stall the
// probe saw as one get of 0.3-1.7 s, often not among the 3 worst of ~230
// that make the p99 (p99 0.6-103 ms in those runs). Its longest waits then,
// 260-1,670 ms (20 runs, 2.9 s in a first run after a quiet spell), against
// 43-109 ms after the fix (inline, 10 runs) and 44-93 ms in pool mode,
// with memcached at 18-170 ms: against the memcached run beside it, the
// bound fails 11 of 13 runs of the fault (passing 320 ms beside
// memcached's 61 and 542 beside its 170), and 2 of 2 attempts of this test
// before the fix (356 and 386 ms), but no run after it (at most 109 ms
// against bounds of 205 ms and more; memcached's own longest waits would
// pass against any of its other runs). A variant that misses it gets a
// second attempt, both servers afresh.
//
// probeClientBuf caps the non-reading clients' socket buffers on their
// side in the probe test. With the system's buffers (tcp_rmem and tcp_wmem
// autotuning up to 32 and 4 MB) every run of 400 such clients, not only the
// first, took the machine's TCP memory to tcp_mem's hard limit (2,249 MiB
// here: 14 runs of 14, under a load average of 12-25), where the kernel
// drops received segments of every socket, the probe's too (TcpExt
// TCPRcvQDrop: 31-1,365 a run), and a probe waits for TCP's retransmission
// timer: 0.5-4.7 s, in every mode, goroutine mode included. With 64 KB on
// the clients' side the peak is 0.66-1.53 GB and no segment is dropped (15
// runs of 15), while the server still finds every client's socket full.
// Each run logs what the kernel went through (tcpKernel).
const probeClientBuf = 64 << 10

// Starvation bounds of TestProbeBesideNonReadingClients on the probe's
// longest wait: probeWaitFactor times memcached's plus probeWaitSlack, or
// probeWaitAlone without memcached.
const (
	probeWaitFactor = 3
	probeWaitSlack  = 150 * time.Millisecond
	probeWaitAlone  = time.Second
)

func TestProbeBesideNonReadingClients(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: needs a few seconds per variant")
	}
	if load, ok := loadAverage(); ok && load > float64(2*runtime.NumCPU()) {
		t.Skipf("load average %.1f on %d CPUs: other processes, not the server, would set the probe's latency", load, runtime.NumCPU())
	}
	bin := plainBinary(t)
	_, err := exec.LookPath("memcached")
	withMemcached := err == nil || os.Getenv(testenv.RequireToolsEnv) != ""
	// The first such run after a quiet spell stalls whichever server runs
	// it: the kernel fills 400 sockets' send buffers for the first time.
	// That cost is measured in docs/benchmarks.md; an unmeasured run goes
	// first.
	warm := startServerBin(t, bin, "pool", "-m", "64", "-c", "4096")
	_ = hostileRun(t, warm.Addr, warm.pid(), 400, 2*time.Second, probeClientBuf)
	warm.Kill()
	const d = 4 * time.Second // the sockets fill in the first 1-2 s
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			threads := "2"
			if i := slices.Index(v.extra, "-t"); i >= 0 {
				threads = v.extra[i+1]
			}
			var misses []string
			for attempt := 0; attempt < 2; attempt++ {
				bound := probeWaitAlone
				if withMemcached {
					mc := testenv.StartMemcached(t, "-m", "64", "-c", "4096", "-t", threads)
					ref := hostileRun(t, mc.Addr, mc.Cmd.Process.Pid, 400, d, probeClientBuf)
					_ = mc.Cmd.Process.Kill()
					<-mc.Exited
					t.Logf("memcached -t %s: probe %d gets, %d errors, p99 %v, max %v; %v", threads, ref.probes, ref.errors, ref.p99, ref.maxLatency, ref.kernel)
					bound = probeWaitFactor*ref.maxLatency + probeWaitSlack
				}
				s := startServerBin(t, bin, v.mode, append([]string{"-m", "64", "-c", "4096"}, v.extra...)...)
				res := hostileRun(t, s.Addr, s.pid(), 400, d, probeClientBuf)
				s.Kill()
				t.Logf("tandem: probe %d gets, p99 %v, max %v (bound %v); %v", res.probes, res.p99, res.maxLatency, bound, res.kernel)
				if res.probes < 50 || res.errors > 0 {
					t.Fatalf("probe: %d gets, %d errors", res.probes, res.errors)
				}
				if res.maxLatency <= bound {
					return
				}
				misses = append(misses, fmt.Sprintf("%v (bound %v)", res.maxLatency, bound))
			}
			t.Errorf("probe's longest wait beside 400 non-reading clients %v, want <= %dx memcached's + %v (%v without memcached)",
				misses, probeWaitFactor, probeWaitSlack, probeWaitAlone)
		})
	}
}

// loadAverage returns the 1-minute load average from /proc/loadavg.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
