package harness

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/mctest"
	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// badServer is a fake memcached for the robustness phases: the first
// connection (the preload) is served (set: STORED); every later connection
// gets what mode says.
type badServer struct {
	ln   net.Listener
	mode string // "wedged": never read; "close": close at once; "wrong-key": answer gets with another key
	wg   sync.WaitGroup
	mu   sync.Mutex
	open []net.Conn // guarded by mu
}

func startBad(t *testing.T, mode string) *badServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &badServer{ln: ln, mode: mode}
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(func() {
		ln.Close()
		b.mu.Lock()
		for _, c := range b.open {
			c.Close()
		}
		b.mu.Unlock()
		b.wg.Wait()
	})
	return b
}

// server returns a Server for b, sampling the test process's own memory.
func (b *badServer) server() *Server {
	return &Server{Addr: b.ln.Addr().String(), PID: os.Getpid(), exited: make(chan struct{})}
}

func (b *badServer) accept() {
	defer b.wg.Done()
	for n := 0; ; n++ {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.open = append(b.open, c)
		b.mu.Unlock()
		mode := b.mode
		if n == 0 {
			mode = "serve"
		}
		switch mode {
		case "wedged":
			// accepted, never read
		case "close":
			c.Close()
		default:
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				serveFake(c, mode == "wrong-key")
			}()
		}
	}
}

// serveFake answers set with STORED and get with a 32-byte value (under
// another key when wrongKey).
func serveFake(c net.Conn, wrongKey bool) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == "set":
			n, _ := strconv.Atoi(f[4])
			if _, err := io.CopyN(io.Discard, r, int64(n+2)); err != nil {
				return
			}
			w.WriteString("STORED\r\n")
		case len(f) == 2 && f[0] == "get":
			key := f[1]
			if wrongKey {
				key += "x"
			}
			w.WriteString("VALUE " + key + " 0 32\r\n" + strings.Repeat("v", 32) + "\r\nEND\r\n")
		default:
			w.WriteString("ERROR\r\n")
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

func quickHostile(clients int) HostileLoad {
	return HostileLoad{Clients: clients, ValueSize: 4096, Duration: 500 * time.Millisecond,
		ProbeEvery: 20 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond, RcvBuf: 16 << 10, Batch: 64}
}

// TestHostileAgainstAWedgedServer: a server that stops reading cannot hang
// the phase; every probe is an error, and the phase ends on time (a
// generous hang guard, not a timing assertion).
func TestHostileAgainstAWedgedServer(t *testing.T) {
	b := startBad(t, "wedged")
	start := time.Now()
	st, err := runHostile(context.Background(), b.server(), quickHostile(8), loadgen.NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("phase took %v", took)
	}
	if st.Connected != 8 || st.ProbeSent == 0 || st.ProbeErrors != st.ProbeSent || st.Closed != 0 || st.FirstError == "" {
		t.Errorf("wedged server: %+v", st)
	}
	if st.PeakRSSKB <= 0 {
		t.Errorf("no peak RSS sampled: %+v", st)
	}
}

// TestHostileCountsClosedConnections: connections the server closes are
// counted, and the probe's failures with them.
func TestHostileCountsClosedConnections(t *testing.T) {
	b := startBad(t, "close")
	st, err := runHostile(context.Background(), b.server(), quickHostile(5), loadgen.NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	if st.Connected != 5 || st.Closed != 5 || st.ProbeErrors != st.ProbeSent {
		t.Errorf("closing server: %+v", st)
	}
}

// TestHostileAgainstMemcached: memcached answers the probe through the
// attack (the baseline).
func TestHostileAgainstMemcached(t *testing.T) {
	if testing.Short() {
		t.Skip("starts memcached; skipped with -short")
	}
	addr := mctest.Memcached(t, "-c", "4096")
	srv := &Server{Addr: addr, PID: os.Getpid(), exited: make(chan struct{})}
	rec := loadgen.NewRecorder()
	h := quickHostile(4)
	h.ProbeTimeout = 2 * time.Second
	h.Settle = h.Duration / 2
	st, err := runHostile(context.Background(), srv, h, rec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Connected != 4 || st.ProbeErrors != 0 || rec.Summary(loadgen.OpGet).Count != st.ProbeSent || st.BytesSent == 0 {
		t.Errorf("memcached: %+v, %d probes answered", st, rec.Summary(loadgen.OpGet).Count)
	}
	// The settled probes are the later part of the answered ones.
	if st.SettledProbes == 0 || st.SettledProbes >= st.ProbeSent || st.SettledP99Us <= 0 {
		t.Errorf("memcached: settled probes %d of %d, p99 %v µs", st.SettledProbes, st.ProbeSent, st.SettledP99Us)
	}
}

func slowLoad(n int) SlowReaderLoad {
	return SlowReaderLoad{Requests: n, Keys: 10, ValueSize: 32, ReadRate: 4 << 20, RcvBuf: 16 << 10, Stall: 5 * time.Second}
}

func TestSlowReaderAgainstMemcached(t *testing.T) {
	if testing.Short() {
		t.Skip("starts memcached; skipped with -short")
	}
	addr := mctest.Memcached(t)
	st, _, err := runSlowReader(context.Background(), addr, slowLoad(3000))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Complete || !st.InOrder || st.Closed || st.Stalled || st.Replies != 3000 || st.FirstError != "" {
		t.Errorf("memcached: %+v", st)
	}
}

func TestSlowReaderSeesWrongReplies(t *testing.T) {
	b := startBad(t, "wrong-key")
	st, _, err := runSlowReader(context.Background(), b.ln.Addr().String(), slowLoad(100))
	if err != nil {
		t.Fatal(err)
	}
	if st.Complete || st.InOrder || st.Replies != 0 || !strings.Contains(st.FirstError, "want") {
		t.Errorf("wrong keys: %+v", st)
	}
}

func TestSlowReaderSeesAClose(t *testing.T) {
	b := startBad(t, "close")
	st, _, err := runSlowReader(context.Background(), b.ln.Addr().String(), slowLoad(100))
	if err != nil {
		t.Fatal(err)
	}
	if st.Complete || !st.Closed || st.Stalled {
		t.Errorf("closed connection: %+v", st)
	}
}

func TestSlowReaderStallIsBounded(t *testing.T) {
	b := startBad(t, "wedged")
	s := slowLoad(100)
	s.Stall = 200 * time.Millisecond
	st, _, err := runSlowReader(context.Background(), b.ln.Addr().String(), s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Complete || !st.Stalled || st.Closed {
		t.Errorf("wedged server: %+v", st)
	}
}

// TestPacedReaderReadsEverything: pacing slices reads but loses nothing.
func TestPacedReaderReadsEverything(t *testing.T) {
	src := strings.Repeat("0123456789", 3000)
	p := &pacedReader{r: strings.NewReader(src), rate: 64 << 20, start: time.Now()}
	got, err := io.ReadAll(p)
	if err != nil || string(got) != src || p.n != int64(len(src)) {
		t.Errorf("read %d bytes (%v), counted %d, want %d", len(got), err, p.n, len(src))
	}
}
