package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// SlowReaderLoad is issue #17's well-behaved slow client: it pipelines
// Requests gets (over Keys keys, in turn, so each reply's key says whether
// replies come in order) and consumes the replies at ReadRate bytes/s.
type SlowReaderLoad struct {
	Requests  int `json:"requests"`
	Keys      int `json:"keys"`
	ValueSize int `json:"value_size"`
	ReadRate  int `json:"read_bytes_per_sec"`
	// RcvBuf is the client's SO_RCVBUF: small, so the replies wait in the
	// server rather than in the client's kernel (with autotuning, up to
	// 32 MB here, every reply would fit there and no server would notice a
	// slow reader).
	RcvBuf int `json:"rcvbuf"`
	// Stall ends the phase when no reply byte arrives (or no request byte
	// can be written) for this long.
	Stall time.Duration `json:"stall_ns"`
}

// SlowReaderStats says whether the slow client was served.
type SlowReaderStats struct {
	Requests int  `json:"requests"`
	Replies  int  `json:"replies"`  // complete, verified replies in the expected order
	InOrder  bool `json:"in_order"` // no reply for another key than the one asked next
	Complete bool `json:"complete"` // every request answered
	// Closed: the server closed or reset the connection before the last
	// reply; Stalled: nothing moved for Stall (or the phase's cap).
	Closed     bool    `json:"closed_by_server,omitempty"`
	Stalled    bool    `json:"stalled,omitempty"`
	ReadKBps   float64 `json:"read_kb_per_sec"` // reply bytes consumed per second / 1024
	FirstError string  `json:"first_error,omitempty"`
}

// slowKeyPrefix names the slow reader's keys.
const slowKeyPrefix = "slow:"

// runSlowReader runs s against addr, bounded by ctx. It never fails for
// what the server does (that is the measurement); it returns an error only
// when the phase could not start.
func runSlowReader(ctx context.Context, addr string, s SlowReaderLoad) (SlowReaderStats, time.Duration, error) {
	st := SlowReaderStats{Requests: s.Requests, InOrder: true}
	vals, err := loadgen.NewValues([]int{s.ValueSize}, 1)
	if err != nil {
		return st, 0, err
	}
	if err := preloadSlow(addr, s.Keys, vals); err != nil {
		return st, 0, err
	}
	nc, err := dialerWithRcvBuf(5*time.Second, s.RcvBuf).DialContext(ctx, "tcp", addr)
	if err != nil {
		return st, 0, err
	}
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() }) // the phase's hard cap
	defer stop()

	start := time.Now()
	werr := make(chan error, 1)
	go func() { werr <- writeSlowGets(nc, s) }()
	paced := &pacedReader{r: nc, rate: s.ReadRate, start: start}
	c := loadgen.NewConn(&readOnly{Conn: nc, r: paced}, 0)
	var key, buf []byte
	var read int64
	for i := range s.Requests {
		_ = nc.SetReadDeadline(time.Now().Add(s.Stall))
		k := uint64(i % s.Keys)
		key = loadgen.AppendKey(key[:0], slowKeyPrefix, k)
		rep, err := c.ReadGet(buf[:0])
		if err != nil {
			st.noteFailure(ctx, err)
			break
		}
		if !rep.Hit || !bytes.Equal(rep.Key, key) {
			st.InOrder = false
			st.noteFailure(ctx, fmt.Errorf("reply %d: hit=%v key %q, want %q", i, rep.Hit, rep.Key, key))
			break
		}
		if !vals.Verify(k, rep.Value) {
			st.noteFailure(ctx, fmt.Errorf("reply %d: value of %s differs", i, key))
			break
		}
		buf = rep.Value
		read += int64(len(rep.Key) + len(rep.Value))
		st.Replies++
	}
	elapsed := time.Since(start)
	_ = nc.Close()
	if err := <-werr; err != nil && st.FirstError == "" && st.Replies < s.Requests {
		st.noteFailure(ctx, err)
	}
	st.Complete = st.Replies == s.Requests
	if sec := elapsed.Seconds(); sec > 0 {
		st.ReadKBps = round1(float64(paced.n) / 1024 / sec)
	}
	return st, elapsed, nil
}

// noteFailure classifies why the replies stopped.
func (st *SlowReaderStats) noteFailure(ctx context.Context, err error) {
	if st.FirstError == "" {
		st.FirstError = err.Error()
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), isReset(err):
		st.Closed = true
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err), ctx.Err() != nil:
		st.Stalled = true
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// preloadSlow stores the keys the slow reader asks for.
func preloadSlow(addr string, keys int, vals *loadgen.Values) error {
	c, err := loadgen.Dial(addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	var key, val []byte
	for k := range uint64(keys) {
		key = loadgen.AppendKey(key[:0], slowKeyPrefix, k)
		val = vals.AppendValue(val[:0], k)
		if st, err := c.Set(key, val); err != nil || st != loadgen.Stored {
			return fmt.Errorf("harness: preload %s: %v %v", key, st, err)
		}
	}
	return nil
}

// writeSlowGets writes every get in 64 KB chunks; a chunk the server does
// not take within s.Stall ends the writing.
func writeSlowGets(nc net.Conn, s SlowReaderLoad) error {
	var buf []byte
	flush := func() error {
		_ = nc.SetWriteDeadline(time.Now().Add(s.Stall))
		_, err := nc.Write(buf)
		buf = buf[:0]
		return err
	}
	for i := range s.Requests {
		buf = append(buf, "get "...)
		buf = append(buf, slowKeyPrefix...)
		buf = strconv.AppendInt(buf, int64(i%s.Keys), 10)
		buf = append(buf, "\r\n"...)
		if len(buf) >= 64<<10 {
			if err := flush(); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// pacedReader reads at most rate bytes per second since start, in chunks
// of at most pacedChunk bytes.
type pacedReader struct {
	r     io.Reader
	rate  int
	start time.Time
	n     int64 // bytes read
}

const pacedChunk = 4 << 10

func (p *pacedReader) Read(b []byte) (int, error) {
	allowed := int64(time.Since(p.start).Seconds()*float64(p.rate)) - p.n
	if allowed < pacedChunk {
		// Wait until a whole chunk is allowed.
		wait := time.Duration(float64(pacedChunk-allowed) / float64(p.rate) * float64(time.Second))
		time.Sleep(wait)
		allowed = pacedChunk
	}
	b = b[:min(len(b), int(allowed), pacedChunk)]
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

// readOnly is a net.Conn whose reads go through r (the pacing).
type readOnly struct {
	net.Conn
	r io.Reader
}

func (c *readOnly) Read(b []byte) (int, error) { return c.r.Read(b) }
