package reactor

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// runQueue is the hand-off of pool mode: event loops append connections that
// have framed requests; a fixed set of long-lived worker tasks, running on
// the Executor, take them in FIFO order and run a slice of each (at most
// ReqsPerEvent requests) before putting it back when more is pending, so a
// long pipeline cannot starve the other connections.
//
// There are two FIFOs: fresh holds connections that had nothing to run
// before (a new request arrived, or their replies drained), yielded holds
// those put back after a slice. Workers alternate between them when both
// have work, so a request that arrives while hundreds of connections cycle
// through long pipelines waits for a slice or two, not for all of them,
// and the cycling connections still get every other turn (memcached gets
// the same effect from handling new socket events before yielded ones).
//
// A connection is in the queue at most once (gconn.state says where it is),
// linked through gconn.next, so the queue allocates nothing. Idle workers
// wait on their own channel. A push wakes one (the most recently idled: its
// stack and caches are the warmest) only when there are more connections
// queued than workers already on their way to the queue (running a slice,
// after which they look at it again, or woken): a wake-up of a parked
// goroutine costs a futex call and often a second OS thread, more than a
// connection waiting for the end of one slice.
type runQueue struct {
	mu      sync.Mutex
	fresh   fifo         // guarded by mu
	yielded fifo         // guarded by mu
	turn    bool         // guarded by mu: the next pop with both non-empty takes yielded
	idle    []*worker    // guarded by mu: workers waiting for work, most recent last
	closed  bool         // guarded by mu: workers exit once the queue is empty
	workers int          // set before the workers start: those not idle run a slice or were woken
	queued  atomic.Int64 // connections in fresh and yielded, for reads without mu
}

// fifo is an intrusive list of connections linked through gconn.next.
type fifo struct {
	head, tail *gconn
	n          int
}

func (f *fifo) push(gc *gconn) {
	gc.next = nil
	if f.tail == nil {
		f.head = gc
	} else {
		f.tail.next = gc
	}
	f.tail = gc
	f.n++
}

func (f *fifo) pop() *gconn {
	gc := f.head
	if gc == nil {
		return nil
	}
	f.head = gc.next
	if f.head == nil {
		f.tail = nil
	}
	gc.next = nil
	f.n--
	return gc
}

// worker is one long-lived task of the pool.
type worker struct {
	q    *runQueue
	wake chan struct{}
	done func()
}

// push appends gc (to yielded when it had just run a slice) and wakes an
// idle worker if the workers on their way to the queue are too few to take
// it. It reports whether it woke one.
func (q *runQueue) push(gc *gconn, yielded bool) bool {
	q.mu.Lock()
	if yielded {
		q.yielded.push(gc)
	} else {
		q.fresh.push(gc)
	}
	q.queued.Add(1)
	var w *worker
	if i := len(q.idle) - 1; i >= 0 && q.fresh.n+q.yielded.n > q.workers-len(q.idle) {
		w = q.idle[i]
		q.idle[i] = nil
		q.idle = q.idle[:i]
	}
	q.mu.Unlock()
	if w != nil {
		w.wake <- struct{}{}
	}
	return w != nil
}

// pop returns the next connection, waiting while the queue is empty; nil
// once the queue is closed and empty.
func (q *runQueue) pop(w *worker) *gconn {
	q.mu.Lock()
	for q.fresh.n+q.yielded.n == 0 {
		if q.closed {
			q.mu.Unlock()
			return nil
		}
		q.idle = append(q.idle, w)
		q.mu.Unlock()
		<-w.wake // push or close took w out of idle
		q.mu.Lock()
	}
	var gc *gconn
	if q.yielded.n > 0 && (q.fresh.n == 0 || q.turn) {
		gc = q.yielded.pop()
	} else {
		gc = q.fresh.pop()
	}
	q.turn = !q.turn
	q.queued.Add(-1)
	q.mu.Unlock()
	return gc
}

// close makes idle workers exit; busy ones exit when they find the queue
// empty.
func (q *runQueue) close() {
	q.mu.Lock()
	q.closed = true
	idle := q.idle
	q.idle = nil
	q.mu.Unlock()
	for _, w := range idle {
		w.wake <- struct{}{}
	}
}

// Run is the worker's task: it runs connections until the queue closes.
func (w *worker) Run() {
	defer w.done()
	for slices := 1; ; slices++ {
		gc := w.q.pop(w)
		if gc == nil {
			return
		}
		gc.runSlice()
		if slices%yieldEvery == 0 && w.q.queued.Load() > 0 {
			// A worker that keeps finding work would hold its processor
			// until the runtime preempts it, 10 ms later, while an event
			// loop back from epoll_wait waits for one to frame new
			// requests: let the loops in now and then.
			runtime.Gosched()
		}
	}
}

// yieldEvery is how many slices in a row a worker runs before it lets other
// goroutines have its processor (when more work is queued; otherwise it
// parks). Measured at -t 2 on 2 cores: yielding after every slice cost
// 5-15% of throughput at 200 connections against every 16th.
const yieldEvery = 16

// load reports the connections waiting in the queue and how many of the
// pool's workers are not idle.
func (q *runQueue) load() (queued int64, running int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.fresh.n + q.yielded.n), q.workers - len(q.idle)
}
