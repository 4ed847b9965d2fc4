package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// HostileLoad is issue #17's attack: Clients connections pipeline gets of
// one ValueSize-byte value over and over and never read a byte, for
// Duration, while one probe connection sends a plain get every ProbeEvery
// and times its reply (ProbeTimeout without a reply is an error).
type HostileLoad struct {
	Clients      int           `json:"clients"`
	ValueSize    int           `json:"value_size"`
	Duration     time.Duration `json:"duration_ns"`
	ProbeEvery   time.Duration `json:"probe_every_ns"`
	ProbeTimeout time.Duration `json:"probe_timeout_ns"`
	// RcvBuf is the SO_RCVBUF of every hostile socket (0 = the kernel's
	// autotuning, up to tcp_rmem's 32 MB here): small, the replies the
	// client never reads pile up in the server instead of the client's
	// kernel, which is what a hostile client wants.
	RcvBuf int `json:"rcvbuf"`
	Batch  int `json:"batch"` // gets per write
	// Settle: probes sent this long after the attack started count also in
	// HostileStats' Settled figures, apart from the first seconds, in which
	// the kernel fills every attacker's send buffer and stalls whichever
	// server writes (0: no settled figures).
	Settle time.Duration `json:"settle_ns,omitempty"`
}

// HostileStats is what the hostile phase saw of the server.
type HostileStats struct {
	Clients    int `json:"clients"`
	Connected  int `json:"connected"`   // hostile connections established
	DialFailed int `json:"dial_failed"` // could not connect within ProbeTimeout
	// Closed counts hostile connections the server closed or reset during
	// the phase (a write failed, or the socket left ESTABLISHED).
	Closed    int   `json:"closed_by_server"`
	BytesSent int64 `json:"request_bytes_sent"`
	// ProbeSent, ProbeErrors: probes sent, and probes without a good reply
	// in ProbeTimeout (timeouts, refused or dropped connections, misses).
	ProbeSent   int64  `json:"probe_sent"`
	ProbeErrors int64  `json:"probe_errors"`
	FirstError  string `json:"first_probe_error,omitempty"`
	// SettledProbes and SettledP99Us: the answered probes sent Settle or
	// later after the start, and their p99 (0 when none).
	SettledProbes int64   `json:"settled_probes,omitempty"`
	SettledP99Us  float64 `json:"settled_p99_us,omitempty"`
	// PeakRSSKB is the larger of the server's VmHWM at the end and the
	// largest VmRSS sampled every 100 ms during the phase.
	PeakRSSKB    int64 `json:"peak_rss_kb"`
	ServerExited bool  `json:"server_exited,omitempty"`
}

// Keys of the hostile phase: one big value the attackers ask for, one
// small value the probe asks for.
const (
	hostileKey = "hostile:v"
	probeKey   = "probe:k"
	probeSize  = 32
)

// runHostile runs h against srv. Every wait is bounded, so a server that
// stops answering (or dies) ends the phase on time; the hostile and probe
// connections are closed before it returns. The probe's latencies go to
// rec as gets.
func runHostile(ctx context.Context, srv *Server, h HostileLoad, rec *loadgen.Recorder) (HostileStats, error) {
	st := HostileStats{Clients: h.Clients}
	probeValue, err := preloadHostile(srv.Addr, h.ValueSize)
	if err != nil {
		return st, err
	}
	stopRSS := sampleRSS(srv.PID, 100*time.Millisecond)

	clients := dialHostile(ctx, srv.Addr, h, &st)
	end := time.Now().Add(h.Duration)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.pipeline(&stop, h.Batch)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		probeLoop(ctx, srv.Addr, h, end, probeValue, rec, &st)
	}()
	select {
	case <-time.After(time.Until(end)):
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait() // writers stop within a write deadline, the probe within ProbeTimeout

	for _, c := range clients {
		if c.closed.Load() || !c.established() {
			st.Closed++
		}
		st.BytesSent += c.sent.Load()
		_ = c.nc.Close()
	}
	st.PeakRSSKB = stopRSS()
	if p, err := ReadProc(srv.PID); err == nil {
		st.PeakRSSKB = max(st.PeakRSSKB, p.HWMKB)
	}
	st.ServerExited = !srv.Alive()
	return st, ctx.Err()
}

// preloadHostile stores the attackers' value and the probe's, and returns
// the probe's value.
func preloadHostile(addr string, size int) ([]byte, error) {
	c, err := loadgen.Dial(addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	probe := bytes.Repeat([]byte{'p'}, probeSize)
	for _, kv := range []struct {
		key string
		val []byte
	}{{hostileKey, bytes.Repeat([]byte{'h'}, size)}, {probeKey, probe}} {
		if s, err := c.Set([]byte(kv.key), kv.val); err != nil || s != loadgen.Stored {
			return nil, fmt.Errorf("harness: preload %s: %v %v", kv.key, s, err)
		}
	}
	return probe, nil
}

// hostileConn is one attacker: it writes and never reads.
type hostileConn struct {
	nc     net.Conn
	sent   atomic.Int64 // request bytes written
	closed atomic.Bool  // a write failed other than by its deadline
}

// dialHostile connects h.Clients attackers; failures are counted in st.
func dialHostile(ctx context.Context, addr string, h HostileLoad, st *HostileStats) []*hostileConn {
	d := dialerWithRcvBuf(h.ProbeTimeout, h.RcvBuf)
	var out []*hostileConn
	for range h.Clients {
		if ctx.Err() != nil {
			break
		}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			st.DialFailed++
			continue
		}
		out = append(out, &hostileConn{nc: nc})
	}
	st.Connected = len(out)
	return out
}

// writeWait bounds each attacker write, so a full socket (the server no
// longer reads) costs at most this much before stop is checked again.
const writeWait = 100 * time.Millisecond

// pipeline writes batch gets of the hostile key again and again until stop,
// resuming a partly written batch where it stopped so the stream stays
// well formed.
func (c *hostileConn) pipeline(stop *atomic.Bool, batch int) {
	buf := bytes.Repeat([]byte("get "+hostileKey+"\r\n"), max(batch, 1))
	off := 0
	for !stop.Load() {
		_ = c.nc.SetWriteDeadline(time.Now().Add(writeWait))
		n, err := c.nc.Write(buf[off:])
		c.sent.Add(int64(n))
		off = (off + n) % len(buf)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			c.closed.Store(true)
			return
		}
	}
}

// established reports whether the socket is still ESTABLISHED: after the
// server closes (FIN: CLOSE_WAIT) or resets (RST: CLOSE) it is not.
func (c *hostileConn) established() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return true
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	state := uint8(0)
	_ = raw.Control(func(fd uintptr) {
		if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			state = info.State
		}
	})
	return state == unix.BPF_TCP_ESTABLISHED
}

// probeLoop sends one plain get every h.ProbeEvery until end and times the
// reply; a reply that is late (h.ProbeTimeout), wrong or missing is an
// error, and the next probe starts on a new connection.
func probeLoop(ctx context.Context, addr string, h HostileLoad, end time.Time, want []byte,
	rec *loadgen.Recorder, st *HostileStats) {
	samples := rec.Samples()
	defer samples.Flush()
	var nc net.Conn
	var c *loadgen.Conn
	defer func() {
		if nc != nil {
			_ = nc.Close()
		}
	}()
	fail := func(err error) {
		st.ProbeErrors++
		if st.FirstError == "" {
			st.FirstError = err.Error()
		}
		if nc != nil {
			_ = nc.Close()
			nc, c = nil, nil
		}
	}
	tick := time.NewTicker(h.ProbeEvery)
	defer tick.Stop()
	settleAt := time.Now().Add(h.Settle)
	settled := loadgen.NewRecorder()
	settledSamples := settled.Samples()
	defer func() {
		settledSamples.Flush()
		sum := settled.Summary(loadgen.OpGet)
		st.SettledProbes, st.SettledP99Us = sum.Count, sum.P99Us
	}()
	var buf []byte
	for time.Now().Before(end) && ctx.Err() == nil {
		<-tick.C
		st.ProbeSent++
		t0 := time.Now()
		if nc == nil {
			var err error
			if nc, err = net.DialTimeout("tcp", addr, h.ProbeTimeout); err != nil {
				nc = nil
				fail(fmt.Errorf("probe dial: %w", err))
				continue
			}
			c = loadgen.NewConn(nc, 0) // deadlines set per probe below
		}
		_ = nc.SetDeadline(t0.Add(h.ProbeTimeout))
		rep, err := c.Get([]byte(probeKey), buf[:0])
		switch {
		case err != nil:
			fail(fmt.Errorf("probe: %w", err))
			continue
		case !rep.Hit || !bytes.Equal(rep.Value, want):
			fail(fmt.Errorf("probe: get %s answered hit=%v with %d bytes", probeKey, rep.Hit, len(rep.Value)))
			continue
		}
		buf = rep.Value
		lat := time.Since(t0)
		samples.Add(loadgen.OpGet, lat)
		if h.Settle > 0 && !t0.Before(settleAt) {
			settledSamples.Add(loadgen.OpGet, lat)
		}
	}
}

// dialerWithRcvBuf dials with timeout and, when rcvbuf > 0, sets SO_RCVBUF
// before connecting (so the window the server sees is the small one).
func dialerWithRcvBuf(timeout time.Duration, rcvbuf int) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, raw syscall.RawConn) error {
			var serr error
			err := raw.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	return d
}

// sampleUnreclaimable reads the process's RssAnon+RssShmem (its status
// file only) every period, and once more when the returned function is
// called, which returns the largest sum seen in KB (0 if none was read).
func sampleUnreclaimable(pid int, period time.Duration) (stop func() int64) {
	read := func() int64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0
		}
		f := parseStatus(b)
		return f.AnonKB + f.ShmemKB
	}
	var peak atomic.Int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			peak.Store(max(peak.Load(), read()))
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(quit)
		<-done
		return max(peak.Load(), read())
	}
}

// sampleRSS reads the process's VmRSS every period until the returned
// function is called, which returns the largest value seen in KB.
func sampleRSS(pid int, period time.Duration) (stop func() int64) {
	var peak atomic.Int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if p, err := ReadProc(pid); err == nil && p.RSSKB > peak.Load() {
				peak.Store(p.RSSKB)
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(quit)
		<-done
		return peak.Load()
	}
}
