package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// coarseClock is a cache.Clock that returns a cached unix time, refreshed by a goroutine right
// after every second boundary, like memcached's current_time. Reading it is one atomic load
// instead of a clock read per operation (time.Now costs 20-40 ns, a third of a cache hit).
// Before start and after stop it returns the time of the last refresh. Safe for concurrent use.
type coarseClock struct {
	now  atomic.Int64
	mu   sync.Mutex    // guards quit and done
	quit chan struct{} // closed by stop
	done chan struct{} // closed when the refresh goroutine returns
}

// newCoarseClock returns a coarseClock set to the current time. It starts no goroutine.
func newCoarseClock() *coarseClock {
	c := &coarseClock{}
	c.now.Store(time.Now().Unix())
	return c
}

// Now returns the cached unix time.
func (c *coarseClock) Now() int64 { return c.now.Load() }

// start begins refreshing the time once per second; it is a no-op if already running.
func (c *coarseClock) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.quit != nil {
		return
	}
	c.quit, c.done = make(chan struct{}), make(chan struct{})
	go c.run(c.quit, c.done)
}

// stop ends the refreshing and waits for its goroutine to return; it is a no-op if not running.
func (c *coarseClock) stop() {
	c.mu.Lock()
	quit, done := c.quit, c.done
	c.quit, c.done = nil, nil
	c.mu.Unlock()
	if quit != nil {
		close(quit)
		<-done
	}
}

func (c *coarseClock) run(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case now := <-t.C:
			c.now.Store(now.Unix())
			// wake just after the next second boundary
			t.Reset(time.Duration(1e9-now.Nanosecond()) + time.Millisecond)
		}
	}
}
