package reactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// readBufferCap is the size of each loop's read buffer (memcached reads
// 16 KiB at a time too).
const readBufferCap = 16 << 10

// gnetServer serves pool and inline modes on gnet event loops.
type gnetServer struct {
	gnet.BuiltinEventEngine

	cfg   Config
	log   zerolog.Logger
	pool  bool // pool mode: execute on workers
	ready chan struct{}

	eng      gnet.Engine // set in OnBoot, before ready is closed
	addrs    []net.Addr  // set in OnBoot, before ready is closed
	umask    func()      // restores the umask set for the unix socket; nil without one
	stopping atomic.Bool
	served   atomic.Bool // Serve returned

	counters
	unfinished atomic.Int64 // connections opened and not yet finished (see gconn.finish)

	limits bufLimits
	epolls epolls
	parked parkedQueue // pool mode

	loopsMu sync.Mutex
	loops   map[gnet.EventLoop]*perLoop // guarded by loopsMu

	connMu sync.Mutex
	// conns holds the connections not yet finished (see gconn.finish):
	// those gnet has open and those it closed with work left; the bool
	// says gnet has it open.
	conns map[*gconn]bool // guarded by connMu
}

func newGnetServer(cfg Config) *gnetServer {
	s := &gnetServer{
		cfg:   cfg,
		log:   cfg.Logger,
		pool:  cfg.Mode == ModePool,
		ready: make(chan struct{}),
		conns: make(map[*gconn]bool),
	}
	s.limits.highWater = cfg.OutputHighWater
	s.limits.limit = cfg.BufferLimit
	return s
}

func (s *gnetServer) Ready() <-chan struct{} { return s.ready }
func (s *gnetServer) Addr() net.Addr         { return s.addrs[0] }
func (s *gnetServer) Addrs() []net.Addr      { return s.addrs }

func (s *gnetServer) Stats() Stats {
	st := s.stats(s.limits.used.Load())
	if s.pool {
		st.Parked, st.Running = s.parked.load()
	}
	return st
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
		// One read takes at most this much; it is also how far a paused
		// connection's input can overshoot its high-water mark.
		gnet.WithReadBufferCap(readBufferCap),
	}
	var addrs []string
	for _, a := range s.cfg.Addrs {
		addrs = append(addrs, "tcp://"+a)
	}
	if p := s.cfg.UnixSocket; p != "" {
		if err := prepareUnixSocket(p); err != nil {
			return err
		}
	}
	if err := checkReadPausing(); err != nil {
		s.epolls.disable()
		s.log.Warn().Err(err).Msg("cannot pause reading a connection; connections over the input caps are closed instead")
	}
	if p := s.cfg.UnixSocket; p != "" {
		addrs = append(addrs, "unix://"+p)
		// gnet binds every listener before it boots: the socket file gets
		// the -a mode through the umask, which OnBoot restores.
		old := syscall.Umask(int(^s.cfg.UnixMask & 0o777))
		var once sync.Once
		s.umask = func() { once.Do(func() { syscall.Umask(old) }) }
		defer s.umask()
	}
	err := gnet.Rotate(s, addrs, opts...)
	s.served.Store(true)
	select {
	case <-s.ready:
	default:
		return bindError(&s.cfg, err)
	}
	if s.stopping.Load() {
		return ErrServerClosed
	}
	if err == nil {
		err = fmt.Errorf("reactor: event engine stopped unexpectedly")
	}
	return fmt.Errorf("reactor: %w", err)
}

// OnBoot records the engine and the bound addresses, and sets the TCP
// listen backlog.
func (s *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	if s.umask != nil {
		s.umask()
	}
	s.eng = eng
	for _, a := range s.cfg.Addrs {
		s.addrs = append(s.addrs, s.boundAddr(eng, a))
	}
	if p := s.cfg.UnixSocket; p != "" {
		s.addrs = append(s.addrs, &net.UnixAddr{Name: p, Net: "unix"})
	}
	close(s.ready)
	return gnet.None
}

// boundAddr asks the kernel for a TCP listener's address (the port may be 0
// in the configuration), setting its backlog on the way; it falls back to
// the configured address.
func (s *gnetServer) boundAddr(eng gnet.Engine, configured string) net.Addr {
	fallback, _ := net.ResolveTCPAddr("tcp", configured)
	fd, err := eng.DupListener("tcp", configured)
	if err != nil {
		return fallback
	}
	defer unix.Close(fd)
	if s.cfg.Backlog > 0 {
		// listen(2) on a listening socket changes its backlog.
		if err := unix.Listen(fd, s.cfg.Backlog); err != nil {
			s.log.Warn().Err(err).Str("addr", configured).Msg("cannot set the listen backlog")
		}
	}
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
	if lo, ok := c.Context().(*loopOut); ok {
		lo.bellOpened() // a loop's doorbell (loopout.go), not a client
		return nil, gnet.None
	}
	if s.stopping.Load() {
		return nil, gnet.Close
	}
	if !s.admit(s.cfg.MaxConns) {
		return tooManyConns, gnet.Close
	}
	gc := newGconn(s, c)
	s.unfinished.Add(1)
	gc.lastActive.Store(s.cfg.activityNow())
	gc.progressed()
	c.SetContext(gc)
	s.connMu.Lock()
	s.conns[gc] = true
	s.connMu.Unlock()
	s.log.Debug().Int("fd", c.Fd()).Msg("connection opened")
	return nil, gnet.None
}

// OnClose lets go of the connection: requests it read still run (unless a
// request or the server closed it) and their replies still go out.
func (s *gnetServer) OnClose(c gnet.Conn, err error) gnet.Action {
	gc, ok := c.Context().(*gconn)
	if !ok {
		if lo, ok := c.Context().(*loopOut); ok {
			lo.bellClosed()
		}
		return gnet.None
	}
	s.curr.Add(-1)
	s.connMu.Lock()
	if _, ok := s.conns[gc]; ok {
		s.conns[gc] = false // finish unregisters it
	}
	s.connMu.Unlock()
	// gnet passes the read or write error when the peer closed or failed
	// (EOF included), and nil when tandem closed the connection.
	gc.detach(err != nil)
	switch {
	case errors.Is(err, io.EOF):
		// The peer's orderly close, not an error.
		s.log.Debug().Msg("connection closed by the peer")
	case err != nil:
		s.log.Debug().Err(err).Msg("connection closed")
	}
	return gnet.None
}

// OnTraffic frames (pool) or frames and executes (inline) what arrived.
func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	gc, ok := c.Context().(*gconn)
	if !ok {
		if lo, ok := c.Context().(*loopOut); ok {
			_, _ = c.Discard(-1)
			if lo.turns != nil {
				lo.turns.polled()
			}
			_ = lo.Run(nil)
			return gnet.None
		}
		return gnet.Close
	}
	gc.lastActive.Store(s.cfg.activityNow()) // idle timeout and stats conns
	if s.pool {
		return gc.frame()
	}
	if !gc.turn() {
		return gnet.None // deferred to the loop's next poll
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
	for gc, open := range s.conns {
		if open && now-gc.lastCmd.Load() > int64(timeout) {
			s.conns[gc] = false
			s.idleClosed.Add(1)
			gc.closeForServer()
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

// Shutdown stops accepting, runs every request already read and waits for
// its reply to leave (or ctx to end), then stops the engine, which closes
// every connection.
func (s *gnetServer) Shutdown(ctx context.Context) error {
	if s.stopping.Swap(true) {
		return nil // already shut down, or shutting down
	}
	select {
	case <-s.ready:
	default:
		return nil
	}
	s.connMu.Lock()
	conns := make([]*gconn, 0, len(s.conns))
	for gc, open := range s.conns {
		if open {
			conns = append(conns, gc)
		}
	}
	s.connMu.Unlock()
	// Each loop stops reading its connections and hands what they buffered
	// to their executors.
	for _, gc := range conns {
		_ = gc.c.EventLoop().Execute(ctx, gnet.RunnableFunc(func(context.Context) error {
			gc.drainForShutdown()
			return nil
		}))
	}
	quiet := func() bool {
		for _, gc := range conns {
			if !gc.quiet() {
				return false
			}
		}
		return true
	}
	// A peer that does not read its replies holds its remaining requests
	// up. Give replies a grace period, then drop the unsent ones so that
	// every request read still runs.
	grace := shutdownReplyGrace
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl)/2)
	}
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if s.waitUntil(graceCtx, quiet) != nil {
		for _, gc := range conns {
			if !gc.quiet() {
				gc.w.abort()
			}
		}
	}
	waitErr := s.waitUntil(ctx, quiet)
	// gnet's Stop looks for the engine's end only every 500 ms (half a second of every
	// stop, and of a warm restart's downtime); Serve's return, when gnet's Rotate returns,
	// says it within a tick.
	stopped := make(chan error, 1)
	go func() { stopped <- s.eng.Stop(ctx) }()
	if err := s.waitUntil(ctx, func() bool { return s.served.Load() || len(stopped) > 0 }); err != nil && waitErr == nil {
		waitErr = err
	}
	select {
	case err := <-stopped:
		if err != nil && waitErr == nil {
			waitErr = err
		}
	default:
	}
	if err := s.waitUntil(ctx, func() bool { return s.unfinished.Load() == 0 }); err != nil && waitErr == nil {
		waitErr = err
	}
	if waitErr != nil {
		return fmt.Errorf("reactor: shutdown: %w", waitErr)
	}
	return nil
}

// shutdownReplyGrace is how long Shutdown waits for peers to read the
// replies to the requests they sent before it drops the rest.
const shutdownReplyGrace = 2 * time.Second

// waitUntil polls cond every 5 ms until it holds or ctx ends.
func (s *gnetServer) waitUntil(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// gnetLogger adapts zerolog to gnet's logger. It drops the two start-up
// lines of gnet that mislead in tandem's log (see gnetMisleading).
type gnetLogger struct{ l zerolog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) {
	if !gnetMisleading(format) {
		g.l.Debug().Msg(fmt.Sprintf(format, args...))
	}
}

func (g gnetLogger) Infof(format string, args ...any) {
	if !gnetMisleading(format) {
		g.l.Info().Msg(fmt.Sprintf(format, args...))
	}
}

// gnetMisleading reports the gnet log formats tandem drops: "default
// logging level is INFO" names gnet's own logger level, which tandem does
// not use (its level is --log-level and -v), and "Launching gnet with N
// event-loops, listening on: tcp://127.0.0.1:0" names the address as given,
// port 0 included; tandem's own "tandem listening" line has the bound
// addresses and the event loops.
func gnetMisleading(format string) bool {
	return strings.HasPrefix(format, "default logging level is") || strings.HasPrefix(format, "Launching gnet with")
}
func (g gnetLogger) Warnf(format string, args ...any)  { g.l.Warn().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) { g.l.Error().Msg(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.l.Error().Msg(fmt.Sprintf(format, args...)) }
