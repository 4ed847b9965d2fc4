package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/protocol"
)

// Mode selects how requests are scheduled.
type Mode string

// Modes.
const (
	ModePool      Mode = "pool"
	ModeInline    Mode = "inline"
	ModeGoroutine Mode = "goroutine"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("reactor: server closed")

// Session is the protocol state of one connection.
//
// In pool mode Next and NeedBytes run on the connection's event loop while
// Execute runs on a worker, possibly at the same time: an implementation must
// keep framing state and execution state apart. Neither is called
// concurrently with itself.
type Session interface {
	// Next parses the next request from buf; see protocol.Parser.Next.
	Next(buf []byte, r *protocol.Request) int
	// NeedBytes reports how many buffered bytes the next Next call needs to
	// make progress, or 0 when unknown.
	NeedBytes() int
	// Execute runs r and appends its reply to out. When closeConn is true the
	// connection is closed after out is written.
	Execute(r *protocol.Request, out []byte) (res []byte, closeConn bool)
	// Close releases the session when its connection is gone.
	Close()
}

// Streamer is implemented by a Session whose replies may come in parts (a
// key dump of a large cache). The reactor calls Stream once, before the
// first Execute. When Unfinished reports, after an Execute, that the reply
// has parts to come, it calls Continue for each, until Continue reports no
// more, before the connection's next request. Between two parts it may
// write out, stop for a slow reader and let other connections run, so a
// long reply is bounded by the writer's caps like any pipeline.
type Streamer interface {
	Stream()
	Unfinished() bool
	Continue(out []byte) (res []byte, more bool)
}

// streamerOf returns sess as a Streamer, switched to streaming, or nil.
func streamerOf(sess Session) Streamer {
	st, ok := sess.(Streamer)
	if ok {
		st.Stream()
	}
	return st
}

// Task is a unit of work handed to an Executor.
type Task = interface{ Run() }

// Executor runs tasks on other goroutines. Submit must never block; an
// error means the task was not accepted (every worker is busy, or the pool
// is closed). Pool mode submits one task per connection with requests to
// run (at most one in flight per connection); a task runs slices of its
// connection and of connections parked because the pool was busy, and
// returns when none is left (dispatch.go). Tasks never block on I/O.
type Executor interface {
	Submit(t Task) error
}

// Config configures a Server.
type Config struct {
	Mode Mode
	// Addrs are the TCP host:port addresses to listen on (memcached's -l,
	// given several times or as a comma list, with -p).
	Addrs []string
	// TLSAddrs are the TCP listeners that speak TLS (memcached's -Z), each
	// with its tls.Config. Every mode serves them with the net front end
	// (tls.go). Addrs lists them first.
	TLSAddrs []TLSListen
	// TLSHandshakeTimeout bounds a TLS handshake from accept to its end;
	// 0 means DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// TLSCounters receives the TLS listeners' counters; nil: the server
	// keeps its own.
	TLSCounters *TLSCounters
	// UnixSocket, when set, is the path of a unix domain socket to listen
	// on (memcached's -s). A stale socket file there is removed at start; a
	// live one (another server answers) is an error. The file is removed
	// when the server stops.
	UnixSocket string
	// UnixMask is the permission mask of the socket file (memcached's -a);
	// 0 means 0700.
	UnixMask os.FileMode
	// Backlog is the listen backlog of TCP listeners (memcached's -b); 0
	// keeps the system's maximum.
	Backlog int
	// Loops is the number of event loops (-t); in goroutine mode it is
	// reported but has no effect.
	Loops int
	// MaxConns is the connection limit (-c); further connections get
	// "ERROR Too many open connections" and are closed.
	MaxConns int
	// NewSession creates the protocol state of a new connection from peer,
	// its remote address.
	NewSession func(peer net.Addr) Session
	// Executor runs pool mode's tasks.
	Executor Executor
	// Workers is the size of the Executor's pool (--workers), for stats:
	// each worker executes one connection's slice of requests at a time.
	Workers int
	// ReqsPerEvent (memcached's -R) is how many requests of one connection
	// run before the others get their turn; a longer pipeline is served in
	// slices, in order.
	ReqsPerEvent int
	// InputHighWater is how much framed but not executed input (pool) or
	// unparsed input (inline) a connection may hold before its reads pause;
	// a request that needs more (a large value) may hold what it needs.
	InputHighWater int
	// MaxPendingRequests caps the requests framed ahead of execution per
	// connection (pool mode), like InputHighWater caps their bytes.
	MaxPendingRequests int
	// OutputHighWater is how many unsent reply bytes a connection may have
	// queued before its requests stop running until the peer reads them.
	OutputHighWater int
	// BufferLimit bounds all connections' buffers together (queued replies,
	// framed and unparsed input; memcached's read_buf_mem_limit): above it a
	// connection may queue no reply bytes the socket refused, and one that
	// holds more input than InputHighWater is closed. Negative: no limit.
	BufferLimit int64
	// MaxInput caps the unparsed input of an incomplete request (a line or
	// value still arriving) per connection; a connection over it is closed.
	// Complete requests never reach it: reads pause first (gnet modes, when
	// the loop's epoll instance is found) or are not issued (goroutine mode).
	MaxInput int
	// MaxOutput caps the replies of one slice of requests (a multi-get of
	// large values); a connection over it is closed.
	MaxOutput int
	// IdleTimeout closes connections idle for longer; 0 disables.
	IdleTimeout time.Duration
	// ReusePort sets SO_REUSEPORT (one listener per loop).
	ReusePort bool
	Logger    zerolog.Logger

	// ObserveLatency, when set, receives the time from a batch of requests
	// arriving to its replies being handed to the socket, for one batch in
	// 64 per connection (see latency.go). It is called on loops, workers and
	// connection goroutines concurrently and must be cheap and non-blocking.
	ObserveLatency func(time.Duration)
	// Clock, when set, returns the unix time in seconds cheaply (such as a
	// clock refreshed once a second). It timestamps connection activity for
	// "stats conns" unless IdleTimeout is set, which needs the exact clock.
	// nil means time.Now, which costs ~100 ns per read on some machines.
	Clock func() int64
}

// Defaults for the per-connection caps and fairness.
const (
	DefaultReqsPerEvent       = 20
	DefaultInputHighWater     = 16 << 10
	DefaultMaxPendingRequests = 32
	DefaultOutputHighWater    = 256 << 10
	DefaultBufferLimit        = 16 << 20
	DefaultMaxInput           = 64 << 20
	DefaultMaxOutput          = 64 << 20
)

// Validate reports whether c is usable, after filling defaults.
func (c *Config) Validate() error {
	switch c.Mode {
	case ModePool, ModeInline, ModeGoroutine:
	default:
		return fmt.Errorf("reactor: unknown mode %q (want pool, inline or goroutine)", c.Mode)
	}
	if c.Loops < 1 {
		return fmt.Errorf("reactor: loops must be >= 1, got %d", c.Loops)
	}
	if c.MaxConns < 1 {
		return fmt.Errorf("reactor: conn limit must be >= 1, got %d", c.MaxConns)
	}
	if c.NewSession == nil {
		return errors.New("reactor: NewSession is required")
	}
	if c.Mode == ModePool && c.Executor == nil {
		return errors.New("reactor: pool mode needs an Executor")
	}
	if c.Mode == ModePool && c.Workers < 1 {
		return fmt.Errorf("reactor: pool mode needs workers >= 1, got %d", c.Workers)
	}
	if c.ReqsPerEvent <= 0 {
		c.ReqsPerEvent = DefaultReqsPerEvent
	}
	if c.InputHighWater <= 0 {
		c.InputHighWater = DefaultInputHighWater
	}
	if c.MaxPendingRequests <= 0 {
		c.MaxPendingRequests = DefaultMaxPendingRequests
	}
	if c.OutputHighWater <= 0 {
		c.OutputHighWater = DefaultOutputHighWater
	}
	if c.BufferLimit == 0 {
		c.BufferLimit = DefaultBufferLimit
	}
	if c.MaxInput <= 0 {
		c.MaxInput = DefaultMaxInput
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if err := c.validateTLS(); err != nil {
		return err
	}
	if len(c.Addrs) == 0 && c.UnixSocket == "" && len(c.TLSAddrs) == 0 {
		return errors.New("reactor: nothing to listen on (no address and no unix socket)")
	}
	for _, a := range c.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("reactor: bad listen address %q: %w", a, err)
		}
	}
	if c.UnixMask == 0 {
		c.UnixMask = 0o700
	}
	if c.Backlog < 0 {
		return fmt.Errorf("reactor: backlog must be >= 0, got %d", c.Backlog)
	}
	return nil
}

// Stats are the server's connection counters.
type Stats struct {
	CurrConns     int64
	TotalConns    uint64
	RejectedConns uint64
	// Parked counts pool-mode connections waiting for a worker because
	// every worker was busy.
	Parked int64
	// Running counts pool tasks running connections' requests now.
	Running int
	// ClosedOverflow counts connections closed for exceeding input or output caps.
	ClosedOverflow uint64
	// ClosedIdle counts connections closed by the idle timeout.
	ClosedIdle uint64
	// Panics counts requests whose execution panicked (their connection was closed).
	Panics uint64
	// Yields counts slices that stopped at ReqsPerEvent with more requests
	// pending (memcached's conn_yields).
	Yields uint64
	// ReadPauses counts the times a connection's reads were paused because
	// its input or output was over its high-water mark.
	ReadPauses uint64
	// ReadBufOOM counts connections closed because every connection's
	// buffers together were over BufferLimit (memcached's read_buf_oom).
	ReadBufOOM uint64
	// BufferBytes is the bytes of connection buffers counted against
	// BufferLimit now.
	BufferBytes int64
}

// counters are a front end's connection counters, read by Stats.
type counters struct {
	curr       atomic.Int64
	total      atomic.Uint64
	rejected   atomic.Uint64
	overflow   atomic.Uint64
	idleClosed atomic.Uint64
	panics     atomic.Uint64
	yields     atomic.Uint64
	readPauses atomic.Uint64
	readBufOOM atomic.Uint64
	// otherConns counts the connections of the front end beside this one
	// (tls.go); nil alone.
	otherConns func() int64
}

// admit counts a new connection and reports whether it is within
// maxConns (both front ends' together); a rejected one is not counted open.
func (c *counters) admit(maxConns int) bool {
	c.total.Add(1)
	n := c.curr.Add(1)
	if c.otherConns != nil {
		n += c.otherConns()
	}
	if n > int64(maxConns) {
		c.curr.Add(-1)
		c.rejected.Add(1)
		return false
	}
	return true
}

func (c *counters) stats(bufferBytes int64) Stats {
	return Stats{
		CurrConns:      c.curr.Load(),
		TotalConns:     c.total.Load(),
		RejectedConns:  c.rejected.Load(),
		ClosedOverflow: c.overflow.Load(),
		ClosedIdle:     c.idleClosed.Load(),
		Panics:         c.panics.Load(),
		Yields:         c.yields.Load(),
		ReadPauses:     c.readPauses.Load(),
		ReadBufOOM:     c.readBufOOM.Load(),
		BufferBytes:    bufferBytes,
	}
}

// Server is a running front end.
type Server interface {
	// Serve listens and serves until Shutdown; it returns ErrServerClosed
	// after a Shutdown and any other error when the server stops by itself.
	Serve() error
	// Ready is closed once the listener is bound.
	Ready() <-chan struct{}
	// Addr is the first bound listen address, valid after Ready.
	Addr() net.Addr
	// Addrs are every bound listen address (TLS ones first, then the other
	// TCP ones, with the ports the kernel chose; then the unix socket),
	// valid after Ready.
	Addrs() []net.Addr
	// Shutdown stops accepting, lets in-flight requests finish and deliver
	// their replies, and closes every connection.
	Shutdown(ctx context.Context) error
	Stats() Stats
}

// New creates a server for cfg.Mode. It does not start listening.
func New(cfg Config) (Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cfg.Logger.With().Str("component", "reactor").Str("mode", string(cfg.Mode)).Logger()
	if cfg.Mode == ModeGoroutine {
		return newNetServer(cfg), nil
	}
	if len(cfg.TLSAddrs) > 0 {
		if len(cfg.Addrs) == 0 && cfg.UnixSocket == "" {
			return newNetServer(cfg), nil // TLS listeners only
		}
		return newSplitServer(cfg), nil
	}
	return newGnetServer(cfg), nil
}

// executeSafely runs one request; a panic is logged with its stack, counted,
// and turned into a closed connection, keeping the replies before it.
func executeSafely(sess Session, r *protocol.Request, out []byte, log zerolog.Logger, panics *atomic.Uint64) (res []byte, closeConn bool) {
	defer func() {
		if p := recover(); p != nil {
			reportPanic(log, panics, p, "request panicked; closing its connection")
			res, closeConn = out, true
		}
	}()
	return sess.Execute(r, out)
}

// continueSafely appends the next part of st's unfinished reply; a panic is
// handled as in executeSafely, and leaves nothing more to continue.
func continueSafely(st Streamer, out []byte, log zerolog.Logger, panics *atomic.Uint64) (res []byte, more, closeConn bool) {
	defer func() {
		if p := recover(); p != nil {
			reportPanic(log, panics, p, "reply part panicked; closing its connection")
			res, more, closeConn = out, false, true
		}
	}()
	res, more = st.Continue(out)
	return res, more, false
}

// reportPanic counts a recovered panic and logs it with its stack.
func reportPanic(log zerolog.Logger, panics *atomic.Uint64, p any, msg string) {
	panics.Add(1)
	log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg(msg)
}

// tooManyConns is memcached's reply to a connection over the limit.
var tooManyConns = []byte("ERROR Too many open connections\r\n")
