package reactor

import (
	"sync"
	"sync/atomic"
	"time"
)

// Inline mode's turns. A connection that ran ReqsPerEvent requests with
// more left yields: it wakes itself (gnet's Wake) to go on after the loop's
// other work; a connection whose socket refused part of its replies does
// not yield at all: like memcached's, it runs again once its socket drains
// (the writer's resume, which wakes it the same way).
//
// gnet runs the wake-ups queued while it runs wake-ups in the same pass,
// before it polls its sockets again: 200 connections that pipeline without
// reading, each woken by its yield or by its writer's resume (its socket
// took bytes again), would keep one loop in that pass for as long as their
// sockets take replies, while a client that sent one request waits unread.
// Measured with 400 of them on two loops: a loop went 0.2-1.3 s without
// polling its sockets, the time the kernel took to fill their sockets.
// memcached's loop polls between turns. Here a loop runs at most yieldBudget
// wake-up turns (yields and resumes alike) after it last polled; a
// connection woken beyond that runs nothing and is deferred, and the loop's
// doorbell (loopout.go) is rung: a ring is an event of the loop's next
// epoll_wait, so the deferred connections are woken from the doorbell's
// OnTraffic, after the loop polled its sockets and served them, and that
// poll starts a new count of turns.
//
// A timer wakes them until the loop has its doorbell: a timer that fires
// while the loop is still in its pass puts them in that pass, the case the
// doorbell exists for, so it is a fallback only.

// yieldBudget is how many wake-up turns a loop runs after it last polled its
// sockets, before further ones wait for the next poll (about ReqsPerEvent
// requests each: ~2-5 ms of work).
const yieldBudget = 64

// yieldDelay is when deferred connections are woken without a doorbell.
const yieldDelay = 100 * time.Microsecond

// loopTurns is one event loop's count of wake-up turns and its deferred
// connections.
type loopTurns struct {
	out      *loopOut    // the loop's doorbell
	run      int         // loop-owned: wake-up turns since the loop last polled its sockets
	timed    atomic.Bool // the fallback timer woke the deferred connections: a new count
	mu       sync.Mutex
	deferred []*gconn // guarded by mu
}

// wakeTurn wakes gc for a turn on its loop (a yield, or the writer's
// resume). Safe from any goroutine.
func (gc *gconn) wakeTurn() {
	gc.woken.Store(true)
	_ = gc.c.Wake(nil)
}

// turn runs on the loop at the start of OnTraffic and reports whether the
// connection runs now. An OnTraffic for a read always runs. A wake-up turn
// runs within the loop's budget; beyond it the connection is deferred to
// the loop's next poll.
func (gc *gconn) turn() bool {
	if !gc.woken.Swap(false) {
		return true
	}
	lt := gc.turns
	if lt.timed.Swap(false) {
		lt.run = 0
	}
	if lt.run < yieldBudget {
		lt.run++
		return true
	}
	lt.mu.Lock()
	lt.deferred = append(lt.deferred, gc)
	first := len(lt.deferred) == 1
	lt.mu.Unlock()
	if first && !lt.out.ring() {
		time.AfterFunc(yieldDelay, lt.wakeTimed)
	}
	return false
}

// yield lets the loop's other connections run before gc goes on.
func (gc *gconn) yield() {
	gc.s.yields.Add(1)
	gc.wakeTurn()
}

// polled runs on the loop in the doorbell's OnTraffic: the loop polled its
// sockets, a new count of turns starts, and the deferred connections are
// woken.
func (lt *loopTurns) polled() {
	lt.run = 0
	lt.wakeDeferred()
}

// wakeTimed is the fallback timer's wake-up (on the timer's goroutine).
func (lt *loopTurns) wakeTimed() {
	lt.timed.Store(true)
	lt.wakeDeferred()
}

func (lt *loopTurns) wakeDeferred() {
	lt.mu.Lock()
	conns := lt.deferred
	lt.deferred = nil
	lt.mu.Unlock()
	for _, gc := range conns {
		gc.wakeTurn()
	}
}
