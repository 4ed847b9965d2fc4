package reactor

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/protocol"
)

// netServer is goroutine mode: plain net, one goroutine per connection.
type netServer struct {
	cfg   Config
	log   zerolog.Logger
	ready chan struct{}

	lns      []net.Listener // set before ready is closed
	stopping atomic.Bool

	tlsLns map[net.Listener]*tls.Config // the TLS listeners (tls.go); set before ready is closed

	counters
	bufBytes atomic.Int64 // bytes of input buffers grown beyond netReadSize, counted against BufferLimit

	mu        sync.Mutex
	conns     map[net.Conn]*netConnState // guarded by mu
	wg        sync.WaitGroup             // connection goroutines
	accepting sync.WaitGroup             // accept loops
}

func newNetServer(cfg Config) *netServer {
	return &netServer{cfg: cfg, log: cfg.Logger, ready: make(chan struct{}), conns: make(map[net.Conn]*netConnState)}
}

func (s *netServer) Ready() <-chan struct{} { return s.ready }
func (s *netServer) Addr() net.Addr         { return s.lns[0].Addr() }

func (s *netServer) Addrs() []net.Addr {
	addrs := make([]net.Addr, len(s.lns))
	for i, ln := range s.lns {
		addrs[i] = ln.Addr()
	}
	return addrs
}

func (s *netServer) Stats() Stats { return s.stats(s.bufBytes.Load()) }

// Serve accepts connections on every listener until Shutdown.
func (s *netServer) Serve() error {
	if err := s.listen(); err != nil {
		for _, ln := range s.lns {
			ln.Close()
		}
		return err
	}
	// Counted before ready: Shutdown waits for the accept loops once ready.
	s.accepting.Add(len(s.lns))
	close(s.ready)
	errs := make(chan error, len(s.lns))
	for _, ln := range s.lns {
		go func() {
			defer s.accepting.Done()
			errs <- s.accept(ln)
		}()
	}
	var first error
	for range s.lns {
		if err := <-errs; first == nil {
			first = err
			if !errors.Is(err, ErrServerClosed) {
				// One listener failed: stop the others too.
				for _, ln := range s.lns {
					ln.Close()
				}
			}
		}
	}
	return first
}

// listen opens the TCP listeners, TLS ones first (so that Addrs lists
// them first in every mode), and the unix socket.
func (s *netServer) listen() error {
	tcp := slices.Clone(s.cfg.TLSAddrs)
	for _, a := range s.cfg.Addrs {
		tcp = append(tcp, TLSListen{Addr: a})
	}
	for _, l := range tcp {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return fmt.Errorf("reactor: %w", err)
		}
		s.lns = append(s.lns, ln)
		if s.cfg.Backlog > 0 {
			setBacklog(ln, s.cfg.Backlog, s.log)
		}
		if l.Config != nil {
			if s.tlsLns == nil {
				s.tlsLns = make(map[net.Listener]*tls.Config)
			}
			s.tlsLns[ln] = l.Config
		}
	}
	if p := s.cfg.UnixSocket; p != "" {
		if err := prepareUnixSocket(p); err != nil {
			return err
		}
		old := syscall.Umask(int(^s.cfg.UnixMask & 0o777))
		ln, err := net.Listen("unix", p)
		syscall.Umask(old)
		if err != nil {
			return fmt.Errorf("reactor: %w", err)
		}
		s.lns = append(s.lns, ln) // Close removes the socket file
	}
	return nil
}

// setBacklog changes a listener's backlog: listen(2) again on a listening
// socket does.
func setBacklog(ln net.Listener, backlog int, log zerolog.Logger) {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		if err := syscall.Listen(int(fd), backlog); err != nil {
			log.Warn().Err(err).Str("addr", ln.Addr().String()).Msg("cannot set the listen backlog")
		}
	})
}

// accept serves one listener until Shutdown.
func (s *netServer) accept(ln net.Listener) error {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.stopping.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && !errors.Is(err, net.ErrClosed) {
				// EMFILE and friends: back off instead of spinning or dying.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn().Err(err).Dur("backoff", backoff).Msg("accept failed")
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("reactor: accept: %w", err)
		}
		backoff = 0
		if !s.admit(s.cfg.MaxConns) {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(tooManyConns)
			_ = c.Close()
			continue
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c = s.wrapTLS(ln, c)
		s.mu.Lock()
		st := newNetConnState(s.cfg.activityNow(), ln.Addr())
		s.conns[c] = st
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(c, st)
	}
}

// Shutdown closes the listener, interrupts connections waiting for input and
// waits for the others to finish the requests they already read.
func (s *netServer) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	select {
	case <-s.ready:
	default:
		return nil
	}
	for _, ln := range s.lns {
		_ = ln.Close()
	}
	// No connection is added once the accept loops are gone, so waiting for
	// the connections cannot race a new one.
	s.accepting.Wait()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.SetReadDeadline(time.Now())
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			_ = c.Close()
		}
		s.mu.Unlock()
		return fmt.Errorf("reactor: shutdown: %w", ctx.Err())
	}
}

const netReadSize = 16 << 10

// serveConn reads, executes every complete request, and flushes the replies
// before blocking for more input. A peer that stops reading blocks only its
// own goroutine in Write: memory stays bounded by the buffers.
func (s *netServer) serveConn(c net.Conn, st *netConnState) {
	sess := s.cfg.NewSession(c.RemoteAddr())
	streamer := streamerOf(sess)
	attachNetPush(sess, c)
	defer func() {
		if p := recover(); p != nil {
			reportPanic(s.log, &s.panics, p, "connection panicked; closing it")
		}
		sess.Close()
		_ = c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.curr.Add(-1)
		s.wg.Done()
	}()
	if !s.handshake(c) {
		return
	}
	w := bufio.NewWriterSize(c, netReadSize)
	buf := make([]byte, netReadSize)
	var req protocol.Request
	var out []byte
	start, end := 0, 0
	grown := 0 // bytes of buf beyond netReadSize, counted in bufBytes
	defer func() { s.bufBytes.Add(-int64(grown)) }()
	lat := newLatencySampler(int(s.total.Load()))
	var t0 time.Time // when the sampled input arrived
	// With an idle timeout, a read must complete a request within it of the
	// last one (memcached's idle_timeout counts from the last command, so a
	// client trickling a partial command is idle too), and a write must make
	// progress within it (a peer that stops reading is stalled).
	idle := s.cfg.IdleTimeout
	lastCmd := time.Now()
	armWrite := func() {
		if idle > 0 {
			_ = c.SetWriteDeadline(time.Now().Add(idle))
		}
	}
	for {
		// Execute every complete request in the buffer.
		closeConn := false
		ran := false
		slice := 0
		for start < end && !closeConn {
			if slice == s.cfg.ReqsPerEvent {
				// Fairness (memcached's -R): let other connections run.
				s.yields.Add(1)
				runtime.Gosched()
				slice = 0
			}
			n := sess.Next(buf[start:end], &req)
			if n == 0 {
				break
			}
			start += n
			if idle > 0 {
				lastCmd = time.Now()
			}
			if req.Cmd == protocol.CmdNone {
				continue
			}
			out, closeConn = executeSafely(sess, &req, out, s.log, &s.panics)
			ran = true
			slice++
			for more := !closeConn && streamer != nil && streamer.Unfinished(); ; {
				if len(out) >= netReadSize {
					armWrite()
					if _, err := w.Write(out); err != nil {
						return
					}
					out = out[:0]
				}
				if !more {
					break
				}
				// The rest of a long reply, a part at a time: a
				// slow reader blocks this goroutine in Write.
				out, more = streamer.Continue(out)
			}
		}
		if len(out) > 0 {
			armWrite()
			if _, err := w.Write(out); err != nil {
				return
			}
			out = out[:0]
		}
		if cap(out) > maxKeptBuffer {
			out = nil
		}
		armWrite()
		if err := w.Flush(); err != nil || closeConn {
			return
		}
		if ran && !t0.IsZero() {
			observeSince(s.cfg.ObserveLatency, t0)
			t0 = time.Time{}
		}
		if start == end {
			start, end = 0, 0
		}
		if s.stopping.Load() {
			return
		}
		// Make room for the rest of the current request.
		need := max(sess.NeedBytes(), end-start+1)
		if need > s.cfg.MaxInput {
			s.overflow.Add(1)
			return
		}
		if start > 0 && (need > len(buf)-start || start == end || end == len(buf)) {
			end = copy(buf, buf[start:end])
			start = 0
		}
		if need > len(buf) || end == len(buf) {
			if need > s.cfg.InputHighWater && s.cfg.BufferLimit > 0 && s.bufBytes.Load() > s.cfg.BufferLimit {
				// Every connection's buffers together are over the limit:
				// give up on this large value rather than grow.
				s.readBufOOM.Add(1)
				return
			}
			nb := make([]byte, max(need, 2*len(buf)))
			s.bufBytes.Add(int64(len(nb) - netReadSize - grown))
			grown = len(nb) - netReadSize
			end = copy(nb, buf[start:end])
			start, buf = 0, nb
		}
		if idle > 0 {
			_ = c.SetReadDeadline(lastCmd.Add(idle))
		}
		n, err := c.Read(buf[end:])
		if n == 0 && err != nil {
			var ne net.Error
			if s.cfg.IdleTimeout > 0 && errors.As(err, &ne) && ne.Timeout() && !s.stopping.Load() {
				s.idleClosed.Add(1)
			}
			return
		}
		end += n
		st.lastActive.Store(s.cfg.activityNow())
		if t0.IsZero() {
			t0 = lat.start(s.cfg.ObserveLatency)
		}
		if start == 0 && end == n && cap(buf) > maxKeptBuffer && end < netReadSize {
			// Shrink a buffer grown for one large value.
			nb := make([]byte, netReadSize)
			end = copy(nb, buf[:end])
			buf = nb
			s.bufBytes.Add(-int64(grown))
			grown = 0
		}
	}
}
