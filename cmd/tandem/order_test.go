package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestReplyOrder checks, black box over the wire, that every reply comes
// back once, whole and in request order while the server's reply path moves
// through all its states: replies written by the executor at once, replies
// queued in the connection's writer while the client reads slowly (the
// loop writes them each time its waker sees the socket writable), the
// connection stopped at the high-water mark and
// resumed once they drained, long pipelines served in -R slices from the run
// queue, 256 KiB and small replies interleaved, over hundreds of batches.
//
// Each connection runs a seeded stream of requests (meta gets carrying
// their sequence number as the opaque, classic gets of distinct keys, mn),
// written in batches of 1 to 12 requests, one write each. A reader that
// alternates phases of slow reading (4 KiB reads with pauses) with fast
// ones compares every byte with the reply expected at that position; a
// mismatch names the request whose reply was due and the one that arrived.
// A credit window bounds the replies outstanding, so the server's output
// stays under --max-conn-output whatever the reader's pace.
//
// It was checked to fail with three one-line mutations (before #41's
// writer: an executor writing directly while the writer's flusher still
// held earlier replies, the flusher writing its queue in reverse, a running
// connection queued again for a second worker); see docs/testing.md.
func TestReplyOrder(t *testing.T) {
	total := 24 << 20 // reply bytes per connection
	if testing.Short() {
		total = 8 << 20
	}
	forVariants(t, func(t *testing.T, v serverVariant) {
		// One loop carries every connection's replies, so replies of many
		// batches queue up on it; more workers than cores keep batches of
		// one connection coming while the loop is busy.
		s := startServer(t, v.mode, append([]string{"-t", "1", "--workers", "4"}, v.extra...)...)
		w := newOrderWorkload()
		w.preload(t, s.Addr)
		const conns = 4
		type result struct {
			summary string
			err     error
		}
		results := make(chan result, conns)
		for i := range conns {
			go func() {
				summary, err := w.run(s.Addr, uint64(i), total)
				results <- result{summary, err}
			}()
		}
		for range conns {
			if r := <-results; r.err != nil {
				t.Error(r.err)
			} else {
				t.Log(r.summary)
			}
		}
		checkHealthy(t, s)
	})
}

// orderWorkload is the keys and values the order test reads.
type orderWorkload struct {
	big   []orderItem // 256 KiB values
	small []orderItem // 0 to 3,000 bytes
}

type orderItem struct {
	key   string
	value []byte
}

func newOrderWorkload() *orderWorkload {
	rng := rand.New(rand.NewPCG(19, 1))
	value := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return b
	}
	w := &orderWorkload{}
	for i := range 4 {
		w.big = append(w.big, orderItem{fmt.Sprintf("ro:big%d", i), value(256 << 10)})
	}
	for i := range 64 {
		w.small = append(w.small, orderItem{fmt.Sprintf("ro:s%d", i), value(rng.IntN(3000))})
	}
	return w
}

// preload stores every item, checking each STORED.
func (w *orderWorkload) preload(t *testing.T, addr string) {
	t.Helper()
	var req, want bytes.Buffer
	for _, it := range append(append([]orderItem{}, w.big...), w.small...) {
		fmt.Fprintf(&req, "set %s 0 0 %d\r\n%s\r\n", it.key, len(it.value), it.value)
		want.WriteString("STORED\r\n")
	}
	c := dial(t, addr)
	if got := roundTrip(t, c, req.String(), want.Len()); got != want.String() {
		t.Fatalf("preload: %s", quote(got))
	}
}

// orderReq is one request of the stream and the reply it must get.
type orderReq struct {
	seq   int
	text  string
	reply []byte
}

// next returns request seq of a connection's stream.
func (w *orderWorkload) next(rng *rand.Rand, seq int) orderReq {
	r := orderReq{seq: seq}
	switch x := rng.IntN(100); {
	case x < 8: // a 256 KiB reply
		it := w.big[rng.IntN(len(w.big))]
		r.text = fmt.Sprintf("mg %s v O%d k\r\n", it.key, seq)
		r.reply = fmt.Appendf(nil, "VA %d O%d k%s\r\n%s\r\n", len(it.value), seq, it.key, it.value)
	case x < 14:
		r.text, r.reply = "mn\r\n", []byte("MN\r\n")
	case x < 26: // classic get: identified by its key and value
		it := w.small[rng.IntN(len(w.small))]
		r.text = "get " + it.key + "\r\n"
		r.reply = fmt.Appendf(nil, "VALUE %s 0 %d\r\n%s\r\nEND\r\n", it.key, len(it.value), it.value)
	case x < 30: // a miss
		r.text = fmt.Sprintf("mg ro:miss v O%d k\r\n", seq)
		r.reply = fmt.Appendf(nil, "EN O%d kro:miss\r\n", seq)
	default:
		it := w.small[rng.IntN(len(w.small))]
		r.text = fmt.Sprintf("mg %s v O%d k\r\n", it.key, seq)
		r.reply = fmt.Appendf(nil, "VA %d O%d k%s\r\n%s\r\n", len(it.value), seq, it.key, it.value)
	}
	return r
}

// orderWindow bounds the reply bytes requested but not yet read, well
// below the default --max-conn-output (64 MiB) and well above what the
// kernel buffers of a connection hold, so a slow phase leaves replies
// waiting in the server.
const orderWindow = 8 << 20

// run drives one connection: a writer sends the stream in batches while
// credit allows, a reader checks the replies. It returns a summary, or the
// first difference, or an error when the stream does not finish within the
// hang guard.
func (w *orderWorkload) run(addr string, id uint64, total int) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	// A fixed receive buffer (no autotuning to megabytes), so the kernel
	// holds less of the backlog and the server more. Not much smaller:
	// with 16 KiB (under the loopback MSS of 64 KiB) a connection was seen
	// to stall for minutes with this buffer empty and megabytes in the
	// server's send queue, the sender apparently left to zero-window
	// probes.
	_ = c.(*net.TCPConn).SetReadBuffer(256 << 10)
	start := time.Now()
	_ = c.SetDeadline(start.Add(2 * time.Minute)) // hang guard

	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	outstanding := 0    // guarded by mu: reply bytes requested, not yet read
	read := 0           // guarded by mu: reply bytes read
	readerDone := false // guarded by mu
	expect := make(chan orderReq, 1<<16)

	werr := make(chan error, 1)
	requests, batches := 0, 0 // written by the writer before werr
	go func() {
		defer close(expect)
		rng := rand.New(rand.NewPCG(id, 7))
		var batch bytes.Buffer
		for seq, sent := 0, 0; sent < total; {
			batch.Reset()
			size := 0
			var reqs []orderReq
			for n := 1 + rng.IntN(12); len(reqs) < n; seq++ {
				r := w.next(rng, seq)
				batch.WriteString(r.text)
				size += len(r.reply)
				reqs = append(reqs, r)
			}
			mu.Lock()
			for outstanding > 0 && outstanding+size > orderWindow && !readerDone {
				cond.Wait()
			}
			stop := readerDone
			outstanding += size
			mu.Unlock()
			if stop {
				break
			}
			for _, r := range reqs {
				expect <- r
			}
			if _, err := c.Write(batch.Bytes()); err != nil {
				werr <- fmt.Errorf("connection %d: write after %d reply bytes: %w", id, sent, err)
				return
			}
			sent += size
			requests, batches = seq, batches+1
		}
		werr <- nil
	}()

	rerr := w.check(c, id, expect, func(n int) {
		mu.Lock()
		outstanding -= n
		read += n
		cond.Signal()
		mu.Unlock()
	})
	mu.Lock()
	readerDone = true
	cond.Signal()
	rerr = annotate(rerr, "%v after the connection opened, %d reply bytes read, %d outstanding", time.Since(start).Round(time.Millisecond), read, outstanding)
	mu.Unlock()
	if rerr != nil {
		c.Close() // unblock the writer
		for range expect {
		}
		return "", rerr
	}
	if err := <-werr; err != nil {
		return "", err
	}
	return fmt.Sprintf("connection %d: %d requests in %d batches, %d reply bytes, in order, in %v",
		id, requests, batches, read, time.Since(start).Round(time.Millisecond)), nil
}

// annotate adds context to a non-nil error.
func annotate(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w\n (%s)", err, fmt.Sprintf(format, args...))
}

// Reader phases: slow reads until orderSlowBytes were read, then fast ones
// for orderFastBytes, and again.
const (
	orderSlowBytes = 512 << 10
	orderSlowRead  = 4 << 10
	orderSlowPause = time.Millisecond
	orderFastBytes = 3 << 20
)

// check reads the replies and compares them with the expected ones, in
// order, calling consumed with the bytes read.
func (w *orderWorkload) check(c net.Conn, id uint64, expect <-chan orderReq, consumed func(int)) error {
	buf := make([]byte, 64<<10)
	var cur orderReq
	off := 0 // into cur.reply
	read, requests := 0, 0
	for {
		n := len(buf)
		if read%(orderSlowBytes+orderFastBytes) < orderSlowBytes {
			n = orderSlowRead
			time.Sleep(orderSlowPause)
		}
		got, err := c.Read(buf[:n])
		read += got
		consumed(got)
		for chunk := buf[:got]; len(chunk) > 0; {
			if off == len(cur.reply) {
				var ok bool
				if cur, ok = <-expect; !ok {
					return fmt.Errorf("connection %d: %d bytes after the %d expected replies: %s", id, len(chunk), requests, quote(string(chunk)))
				}
				off = 0
				requests++
			}
			k := min(len(chunk), len(cur.reply)-off)
			if want := cur.reply[off : off+k]; !bytes.Equal(chunk[:k], want) {
				d := firstDiff(string(chunk[:k]), string(want))
				came := append(append([]byte{}, cur.reply[:off+d]...), chunk[d:]...)
				return orderMismatch(id, cur, off+d, came, c)
			}
			off += k
			chunk = chunk[k:]
		}
		if err != nil {
			return fmt.Errorf("connection %d: reading the reply to request %d (%s) at byte %d of %d, after %d reply bytes: %v\n (sockets: %s)",
				id, cur.seq, strings.TrimSpace(cur.text), off, len(cur.reply), read, err, testenv.Queues(c))
		}
		if off == len(cur.reply) && len(expect) == 0 {
			// Everything read so far is checked; the stream may be over.
			next, ok := <-expect
			if !ok {
				return w.checkSilent(c, id, requests, read)
			}
			cur, off = next, 0
			requests++
		}
	}
}

// checkSilent proves that nothing follows the last reply: a version fence
// must be answered next.
func (w *orderWorkload) checkSilent(c net.Conn, id uint64, requests, read int) error {
	if _, err := io.WriteString(c, "version\r\n"); err != nil {
		return err
	}
	got := make([]byte, len(sentinelReply))
	n, err := io.ReadFull(c, got)
	if err != nil || string(got) != sentinelReply {
		return fmt.Errorf("connection %d: after the %d expected replies (%d bytes) came %q (%v), want only the version fence's reply",
			id, requests, read, got[:n], err)
	}
	return nil
}

// replyHead matches the start of a reply of the order test's stream.
var replyHead = regexp.MustCompile(`(?:VA \d+|EN) O(\d+) k(\S+)|VALUE (\S+) \d+ \d+\r\n|MN\r\n`)

// orderMismatch describes a reply that differs from the expected one at
// byte d: came holds what arrived from the start of that reply on. It says
// what was due, what came, and which request the bytes that came belong to
// when they carry an opaque.
func orderMismatch(id uint64, due orderReq, d int, came []byte, c net.Conn) error {
	// Read a little more to show (and identify) what came instead.
	more := make([]byte, 512)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.ReadAtLeast(c, more, 300)
	came = append(came, more[:n]...)
	from := max(0, d-40)
	what := "no reply of this stream"
	if m := replyHead.FindSubmatch(came[from:]); m != nil {
		seq, _ := strconv.Atoi(string(m[1]))
		switch {
		case m[3] != nil:
			what = fmt.Sprintf("a classic get's reply (key %s, no opaque)", m[3])
		case m[1] == nil:
			what = "an mn reply"
		case seq < due.seq:
			what = fmt.Sprintf("the reply to the earlier request %d (key %s): a duplicate or a late reply", seq, m[2])
		case seq > due.seq:
			what = fmt.Sprintf("the reply to the later request %d (key %s): reordered, or request %d's reply lost", seq, m[2], due.seq)
		default:
			what = "this request's own reply, altered"
		}
	}
	clip := func(b []byte) string { return quote(string(b[:min(len(b), 160)])) }
	return fmt.Errorf("connection %d: the reply to request %d (%s, %d bytes) differs at its byte %d\n got  %s\n want %s\n (both from byte %d); what came is %s",
		id, due.seq, strings.TrimSpace(due.text), len(due.reply), d, clip(came[from:]), clip(due.reply[from:]), from, what)
}
