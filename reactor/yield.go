package reactor

import (
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Inline mode's turns. A connection that ran ReqsPerEvent requests with
// more left yields: it wakes itself (gnet's Wake) to go on after the loop's
// other work. But gnet runs the wake-ups queued while it runs wake-ups in
// the same pass, before it polls its sockets again: 200 connections that
// pipeline without reading would keep one loop in that pass for as long as
// their sockets take replies (hundreds of milliseconds, measured with 400
// of them on two loops), while a client that sent one request waits
// unread. memcached's loop polls between turns. Here each loop allows
// yieldBudget turns by wake-up after it last polled its sockets; a connection
// yielding beyond that is woken from a timer instead, after the loop has
// polled its sockets and served them.
//
// A connection whose socket refused part of its replies does not yield at
// all: like memcached's, it runs again once its socket drains (the
// writer's resume), not while its replies cannot be written.

// yieldBudget is how many wake-up turns a loop runs, after it last polled
// its sockets, before further yields wait for the timer (about ReqsPerEvent
// requests each: ~2-5 ms of work).
const yieldBudget = 64

// yieldDelay is when deferred connections are woken.
const yieldDelay = 100 * time.Microsecond

// loopTurns is one event loop's count of wake-up turns and its deferred
// connections.
type loopTurns struct {
	run      int  // loop-owned: wake-up turns since the loop last polled its sockets
	waking   bool // loop-owned: the loop ran a wake-up turn since it last read a socket
	mu       sync.Mutex
	deferred []gnet.Conn // guarded by mu
}

// traffic runs on the loop at the start of OnTraffic. gnet reads sockets
// before it runs wake-ups in each pass: a read after a wake-up turn means
// the loop polled its sockets again, which starts a new count of turns.
func (gc *gconn) traffic() {
	lt := gc.turns
	if gc.yielded {
		gc.yielded = false
		lt.waking = true
		return
	}
	if lt.waking {
		lt.waking = false
		lt.run = 0
	}
}

// yield lets the loop's other connections run before gc goes on.
func (gc *gconn) yield() {
	gc.s.yields.Add(1)
	gc.yielded = true
	lt := gc.turns
	if lt.run < yieldBudget {
		lt.run++
		_ = gc.c.Wake(nil)
		return
	}
	lt.mu.Lock()
	lt.deferred = append(lt.deferred, gc.c)
	first := len(lt.deferred) == 1
	lt.mu.Unlock()
	if first {
		time.AfterFunc(yieldDelay, lt.wake)
	}
}

// wake wakes the deferred connections (on the timer's goroutine).
func (lt *loopTurns) wake() {
	lt.mu.Lock()
	conns := lt.deferred
	lt.deferred = nil
	lt.mu.Unlock()
	for _, c := range conns {
		_ = c.Wake(nil)
	}
}
