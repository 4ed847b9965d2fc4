// Package workerpool runs tasks on a bounded set of goroutines.
//
// It wraps an ants v2 generic pool in nonblocking mode: Submit never blocks
// the caller, and a full pool is reported as ErrOverloaded (and counted).
// ants does the pooling: a task goes to an idle worker or to a new one
// while fewer than Workers run, and idle workers expire. tandem's pool mode
// submits a task per connection with requests to run; when the pool is
// full the reactor parks the connection for a running task to take, so
// Overloads counts how often connections waited for a worker. The package
// knows nothing of connections or protocols: it runs Tasks.
package workerpool

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/panjf2000/ants/v2"
	"github.com/rs/zerolog"
)

// Errors returned by Submit.
var (
	ErrOverloaded = errors.New("workerpool: overloaded")
	ErrClosed     = errors.New("workerpool: closed")
)

// Task is a unit of work. Run must recover from its own panics when it needs
// a reply to be sent; the pool recovers and logs any panic that escapes.
type Task interface {
	Run()
}

// Config configures a Pool.
type Config struct {
	// Workers is the maximum number of concurrently running tasks.
	Workers int
	// IdleExpiry is how long an idle worker goroutine is kept; 0 means 10s.
	IdleExpiry time.Duration
	// Logger receives panics and ants' own messages.
	Logger zerolog.Logger
}

// Validate reports whether c is usable.
func (c Config) Validate() error {
	if c.Workers < 1 {
		return fmt.Errorf("workerpool: workers must be >= 1, got %d", c.Workers)
	}
	return nil
}

// Pool is a bounded, nonblocking worker pool. Its methods are safe for
// concurrent use.
type Pool struct {
	p         *ants.PoolWithFuncGeneric[Task]
	log       zerolog.Logger
	overloads atomic.Uint64
	panics    atomic.Uint64
}

// New creates a Pool. Worker goroutines start lazily on Submit.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	expiry := cfg.IdleExpiry
	if expiry <= 0 {
		expiry = 10 * time.Second
	}
	pl := &Pool{log: cfg.Logger.With().Str("component", "workerpool").Logger()}
	p, err := ants.NewPoolWithFuncGeneric[Task](cfg.Workers, pl.run,
		ants.WithNonblocking(true),
		ants.WithExpiryDuration(expiry),
		ants.WithLogger(&antsLogger{l: pl.log}),
	)
	if err != nil {
		return nil, fmt.Errorf("workerpool: %w", err)
	}
	pl.p = p
	return pl, nil
}

func (pl *Pool) run(t Task) {
	defer func() {
		if r := recover(); r != nil {
			pl.panics.Add(1)
			pl.log.Error().Interface("panic", r).Bytes("stack", debug.Stack()).Msg("task panicked")
		}
	}()
	t.Run()
}

// Submit starts t on an idle or new worker. It never blocks: when every
// worker is busy it returns ErrOverloaded, and after Release ErrClosed.
func (pl *Pool) Submit(t Task) error {
	err := pl.p.Invoke(t)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ants.ErrPoolOverload):
		pl.overloads.Add(1)
		return ErrOverloaded
	case errors.Is(err, ants.ErrPoolClosed):
		return ErrClosed
	default:
		return fmt.Errorf("workerpool: %w", err)
	}
}

// Running reports the number of busy workers.
func (pl *Pool) Running() int { return pl.p.Running() }

// Cap reports the maximum number of workers.
func (pl *Pool) Cap() int { return pl.p.Cap() }

// Overloads reports how many submits found every worker busy.
func (pl *Pool) Overloads() uint64 { return pl.overloads.Load() }

// Panics reports how many tasks panicked.
func (pl *Pool) Panics() uint64 { return pl.panics.Load() }

// Release stops accepting tasks and waits up to timeout for running ones.
func (pl *Pool) Release(timeout time.Duration) error {
	if err := pl.p.ReleaseTimeout(timeout); err != nil {
		return fmt.Errorf("workerpool: release: %w", err)
	}
	return nil
}

// antsLogger adapts zerolog to ants' Printf-style logger.
type antsLogger struct{ l zerolog.Logger }

func (a *antsLogger) Printf(format string, args ...any) {
	a.l.Warn().Msg(fmt.Sprintf(format, args...))
}
