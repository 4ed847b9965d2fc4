package reactor

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// Task is a unit of work handed to an Executor.
type Task = interface{ Run() }

// Executor runs tasks on other goroutines. Submit must never block; an
// error means the task was not accepted (the pool is busy or closed).
type Executor interface {
	Submit(t Task) error
}

// Config configures a Server.
type Config struct {
	Mode Mode
	// Addr is host:port to listen on (TCP).
	Addr string
	// Loops is the number of event loops (-t); in goroutine mode it is
	// reported but has no effect.
	Loops int
	// MaxConns is the connection limit (-c); further connections get
	// "ERROR Too many open connections" and are closed.
	MaxConns int
	// NewSession creates the protocol state of a new connection.
	NewSession func() Session
	// Executor runs connection batches in pool mode.
	Executor Executor
	// MaxPendingInput caps the bytes of framed but not yet executed
	// requests per connection (pool mode); above it framing pauses.
	MaxPendingInput int
	// MaxInput caps the unparsed input buffered per connection; a connection
	// over it is closed (a client that sends without reading).
	MaxInput int
	// MaxOutput caps reply bytes queued for a connection that does not read;
	// a connection over it is closed.
	MaxOutput int
	// IdleTimeout closes connections idle for longer; 0 disables.
	IdleTimeout time.Duration
	// WorkerWrites lets a pool worker write a batch's replies to the socket
	// itself while the connection has nothing queued on its loop, instead of
	// handing every batch to the loop's outbox (a queue hop and, when the
	// outbox was empty, an eventfd wake-up and two allocations). A reply the socket cannot take
	// at once still goes through the loop, which keeps order and the output
	// cap. Pool mode only.
	WorkerWrites bool
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

// Defaults for the per-connection caps.
const (
	DefaultMaxPendingInput = 4 << 20
	DefaultMaxInput        = 64 << 20
	DefaultMaxOutput       = 64 << 20
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
	if c.MaxPendingInput <= 0 {
		c.MaxPendingInput = DefaultMaxPendingInput
	}
	if c.MaxInput <= 0 {
		c.MaxInput = DefaultMaxInput
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("reactor: bad listen address %q: %w", c.Addr, err)
	}
	return nil
}

// Stats are the server's connection counters.
type Stats struct {
	CurrConns     int64
	TotalConns    uint64
	RejectedConns uint64
	// Parked counts pool-mode connections waiting for a free worker.
	Parked int64
	// ClosedOverflow counts connections closed for exceeding input or output caps.
	ClosedOverflow uint64
	// ClosedIdle counts connections closed by the idle timeout.
	ClosedIdle uint64
	// Panics counts requests whose execution panicked (their connection was closed).
	Panics uint64
}

// Server is a running front end.
type Server interface {
	// Serve listens and serves until Shutdown; it returns ErrServerClosed
	// after a Shutdown and any other error when the server stops by itself.
	Serve() error
	// Ready is closed once the listener is bound.
	Ready() <-chan struct{}
	// Addr is the bound listen address, valid after Ready.
	Addr() net.Addr
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
	return newGnetServer(cfg), nil
}

// executeSafely runs one request; a panic is logged with its stack, counted,
// and turned into a closed connection, keeping the replies before it.
func executeSafely(sess Session, r *protocol.Request, out []byte, log zerolog.Logger, panics *atomic.Uint64) (res []byte, closeConn bool) {
	defer func() {
		if p := recover(); p != nil {
			panics.Add(1)
			log.Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("request panicked; closing its connection")
			res, closeConn = out, true
		}
	}()
	return sess.Execute(r, out)
}

// tooManyConns is memcached's reply to a connection over the limit.
var tooManyConns = []byte("ERROR Too many open connections\r\n")
