package reactor

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// gnetServer serves pool and inline modes on gnet event loops.
type gnetServer struct {
	gnet.BuiltinEventEngine

	cfg   Config
	log   zerolog.Logger
	pool  bool // pool mode: execute on the Executor
	ready chan struct{}

	eng      gnet.Engine // set in OnBoot, before ready is closed
	addr     net.Addr    // set in OnBoot, before ready is closed
	stopping atomic.Bool

	curr       atomic.Int64
	total      atomic.Uint64
	rejected   atomic.Uint64
	overflow   atomic.Uint64
	idleClosed atomic.Uint64
	panics     atomic.Uint64
	busy       atomic.Int64 // pool tasks running or parked
	writes     atomic.Int64 // replies in outboxes not yet written
	boxes      outboxes     // pool mode: one per event loop

	connMu sync.Mutex
	conns  map[*gconn]struct{} // guarded by connMu: open connections

	park *parking
}

func newGnetServer(cfg Config) *gnetServer {
	return &gnetServer{
		cfg:   cfg,
		log:   cfg.Logger,
		pool:  cfg.Mode == ModePool,
		ready: make(chan struct{}),
		conns: make(map[*gconn]struct{}),
		park:  newParking(),
	}
}

func (s *gnetServer) Ready() <-chan struct{} { return s.ready }
func (s *gnetServer) Addr() net.Addr         { return s.addr }

func (s *gnetServer) Stats() Stats {
	return Stats{
		CurrConns:      s.curr.Load(),
		TotalConns:     s.total.Load(),
		RejectedConns:  s.rejected.Load(),
		Parked:         int64(s.park.len()),
		ClosedOverflow: s.overflow.Load(),
		ClosedIdle:     s.idleClosed.Load(),
		Panics:         s.panics.Load(),
	}
}

// Serve runs the event loops until Shutdown. An engine that stops by itself
// (gnet stops the whole engine on e.g. EMFILE) is reported as an error.
func (s *gnetServer) Serve() error {
	opts := []gnet.Option{
		gnet.WithNumEventLoop(s.cfg.Loops),
		gnet.WithReuseAddr(true),
		gnet.WithReusePort(s.cfg.ReusePort),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{l: s.log}),
		gnet.WithTicker(s.cfg.IdleTimeout > 0),
	}
	var stopParking context.CancelFunc
	if s.pool {
		var ctx context.Context
		ctx, stopParking = context.WithCancel(context.Background())
		go s.park.retryLoop(ctx, s.cfg.Executor)
	}
	err := gnet.Run(s, "tcp://"+s.cfg.Addr, opts...)
	if stopParking != nil {
		stopParking()
	}
	if s.stopping.Load() {
		return ErrServerClosed
	}
	if err == nil {
		err = fmt.Errorf("reactor: event engine stopped unexpectedly")
	}
	return fmt.Errorf("reactor: %w", err)
}

// OnBoot records the engine and the bound address.
func (s *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	s.addr = boundAddr(eng, s.cfg.Addr)
	close(s.ready)
	return gnet.None
}

// boundAddr asks the kernel for the listener's address (the port may be 0 in
// the configuration); it falls back to the configured address.
func boundAddr(eng gnet.Engine, configured string) net.Addr {
	fallback, _ := net.ResolveTCPAddr("tcp", configured)
	fd, err := eng.Dup()
	if err != nil {
		return fallback
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fallback
	}
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]).To16(), Port: a.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return fallback
}

// OnOpen enforces the connection limit and attaches the connection state.
func (s *gnetServer) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if s.stopping.Load() {
		return nil, gnet.Close
	}
	s.total.Add(1)
	if n := s.curr.Add(1); n > int64(s.cfg.MaxConns) {
		s.curr.Add(-1)
		s.rejected.Add(1)
		return tooManyConns, gnet.Close
	}
	gc := newGconn(s, c)
	gc.lastActive.Store(s.cfg.activityNow())
	gc.progressed()
	c.SetContext(gc)
	s.connMu.Lock()
	s.conns[gc] = struct{}{}
	s.connMu.Unlock()
	s.log.Debug().Int("fd", c.Fd()).Msg("connection opened")
	return nil, gnet.None
}

// OnClose releases the connection state.
func (s *gnetServer) OnClose(c gnet.Conn, err error) gnet.Action {
	gc, ok := c.Context().(*gconn)
	if !ok {
		return gnet.None
	}
	s.curr.Add(-1)
	s.connMu.Lock()
	delete(s.conns, gc)
	s.connMu.Unlock()
	gc.onClose()
	if err != nil {
		s.log.Debug().Err(err).Msg("connection closed")
	}
	return gnet.None
}

// OnTraffic frames (pool) or frames and executes (inline) what arrived.
func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	gc, ok := c.Context().(*gconn)
	if !ok {
		return gnet.Close
	}
	gc.lastActive.Store(s.cfg.activityNow()) // idle timeout and stats conns
	if s.pool {
		return gc.frame()
	}
	return gc.runInline()
}

// OnTick closes connections that completed no request for the idle timeout:
// idle ones, and ones stalled mid-request (a slowloris client) or stuck
// behind output their peer does not read.
func (s *gnetServer) OnTick() (time.Duration, gnet.Action) {
	timeout := s.cfg.IdleTimeout
	now := time.Now().UnixNano()
	s.connMu.Lock()
	for gc := range s.conns {
		if now-gc.lastCmd.Load() > int64(timeout) {
			delete(s.conns, gc)
			s.idleClosed.Add(1)
			_ = gc.c.Close()
		}
	}
	s.connMu.Unlock()
	tick := timeout / 4
	if tick > time.Second {
		tick = time.Second
	}
	return tick, gnet.None
}

// Shutdown stops accepting, waits for running batches and for every reply
// to leave the process, then stops the engine (which closes every
// connection).
func (s *gnetServer) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	select {
	case <-s.ready:
	default:
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.busy.Load() > 0 || s.writes.Load() > 0 || s.unsentOutput(ctx) {
		select {
		case <-ctx.Done():
			_ = s.eng.Stop(context.Background())
			return fmt.Errorf("reactor: shutdown: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if err := s.eng.Stop(ctx); err != nil {
		return fmt.Errorf("reactor: shutdown: %w", err)
	}
	return nil
}

// unsentOutput reports whether any connection still has replies buffered in
// gnet. Outbound buffers belong to the loops, so each loop is asked.
func (s *gnetServer) unsentOutput(ctx context.Context) bool {
	s.connMu.Lock()
	conns := make([]*gconn, 0, len(s.conns))
	for gc := range s.conns {
		conns = append(conns, gc)
	}
	s.connMu.Unlock()
	var pending atomic.Int64
	var wg sync.WaitGroup
	for _, gc := range conns {
		wg.Add(1)
		gc := gc
		err := gc.c.EventLoop().Execute(ctx, gnet.RunnableFunc(func(context.Context) error {
			defer wg.Done()
			gc.mu.Lock()
			closed := gc.closed
			gc.mu.Unlock()
			if !closed && gc.c.OutboundBuffered() > 0 {
				pending.Add(1)
			}
			return nil
		}))
		if err != nil {
			wg.Done()
		}
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		return false
	}
	return pending.Load() > 0
}

// gnetLogger adapts zerolog to gnet's logger.
type gnetLogger struct{ l zerolog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) { g.l.Debug().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Infof(format string, args ...any)  { g.l.Info().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.l.Warn().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) { g.l.Error().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.l.Error().Msg(fmt.Sprintf(format, args...)) }
