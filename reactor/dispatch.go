package reactor

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Pool mode's scheduling. A connection with framed requests is handed to
// the Executor (the ants pool) as a task of its own: at most one per
// connection is in flight (gconn.state says where it is). When every worker
// is busy, Submit fails at once (the pool counts an overload) and the
// connection is parked here instead; a task that finishes a slice of its
// connection takes the next parked one before it returns to the pool, so
// the pool's size is the number of connections executing at once and a
// parked connection waits for a slice, never for an idle worker.
//
// There are two FIFOs: fresh holds connections that had nothing to run
// before (a new request arrived, or their replies drained), yielded holds
// those put back after a slice with more to run. Tasks alternate between
// them when both have work, so a request that arrives while hundreds of
// connections cycle through long pipelines waits for a slice or two, not
// for all of them (memcached gets the same effect from handling new socket
// events before yielded ones).
//
// Lost wake-ups: a task returns to the pool only after it found both FIFOs
// empty under mu, and active counts the tasks that have not done so yet.
// A loop that parks a connection with active == 0 knows no task will look
// again, so it submits one more (retrying while the pool's workers are
// between their last look and their return to the pool).
type parkedQueue struct {
	mu      sync.Mutex
	fresh   fifo         // guarded by mu
	yielded fifo         // guarded by mu
	turn    bool         // guarded by mu: the next pop with both non-empty takes yielded
	active  int          // guarded by mu: tasks submitted that have not yet found the queue empty
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

// pushLocked parks gc.
func (q *parkedQueue) pushLocked(gc *gconn, yielded bool) {
	if yielded {
		q.yielded.push(gc)
	} else {
		q.fresh.push(gc)
	}
	q.queued.Add(1)
}

// popLocked returns the next parked connection, or nil.
func (q *parkedQueue) popLocked() *gconn {
	if q.fresh.n+q.yielded.n == 0 {
		return nil
	}
	var gc *gconn
	if q.yielded.n > 0 && (q.fresh.n == 0 || q.turn) {
		gc = q.yielded.pop()
	} else {
		gc = q.fresh.pop()
	}
	q.turn = !q.turn
	q.queued.Add(-1)
	return gc
}

// submitSpins is how often submitDrainer resubmits at once, yielding its
// processor in between, while every worker is between its last look at
// the queue and its return to the pool; then it retries from a timer.
const submitSpins = 64

// submitRetryDelay is the timer's period after the spins.
const submitRetryDelay = 100 * time.Microsecond

// dispatch runs gc (state stQueued) on a task of its own, or parks it for
// a running task to take: when the running tasks outnumber the parked
// connections, or when the pool is full. It reports whether a task was
// started for it.
func (s *gnetServer) dispatch(gc *gconn) bool {
	q := &s.parked
	q.mu.Lock()
	if q.fresh.n+q.yielded.n < q.active {
		// Fewer connections wait than running tasks will look at the
		// queue again: one of them takes gc after its slice, without the
		// wake-up (a futex and often a second OS thread) of an idle
		// worker.
		q.pushLocked(gc, false)
		q.mu.Unlock()
		return false
	}
	q.active++
	q.mu.Unlock()
	if s.cfg.Executor.Submit(gc) == nil {
		return true
	}
	q.mu.Lock()
	q.active--
	q.pushLocked(gc, false)
	none := q.active == 0
	q.mu.Unlock()
	if none {
		s.submitDrainer()
	}
	return false
}

// submitDrainer starts a task for the parked connections when no task is
// left to take them. On a loaded machine a worker's return to the pool can
// take a while (its thread may be descheduled): then the retries go on from
// a timer, never blocking the loop that parked the connection.
func (s *gnetServer) submitDrainer() {
	q := &s.parked
	if s.served.Load() {
		return // the engine is gone, and with it every connection
	}
	for i := 0; i < submitSpins; i++ {
		q.mu.Lock()
		if q.active > 0 || q.fresh.n+q.yielded.n == 0 {
			q.mu.Unlock()
			return // a task will look at the queue again
		}
		q.active++
		q.mu.Unlock()
		if s.cfg.Executor.Submit(drainer{s}) == nil {
			return
		}
		q.mu.Lock()
		q.active--
		q.mu.Unlock()
		runtime.Gosched() // let the workers return to the pool
	}
	time.AfterFunc(submitRetryDelay, s.submitDrainer)
}

// drainer is a task that only takes parked connections.
type drainer struct{ s *gnetServer }

func (d drainer) Run() { d.s.runTasks(nil) }

// Run is gc's task: it runs a slice of gc, then parked connections, until
// none is left.
func (gc *gconn) Run() { gc.s.runTasks(gc) }

// runTasks runs slices of gc and of parked connections until the queue is
// empty. A connection with more to run after its slice goes to the back of
// the queue, so connections take turns. A panic that escapes a slice (the
// session's own are recovered per request) closes that connection and the
// task goes on with the others.
func (s *gnetServer) runTasks(gc *gconn) {
	q := &s.parked
	for slices := 1; ; slices++ {
		if gc != nil {
			s.runSliceSafely(gc)
		}
		q.mu.Lock()
		gc = q.popLocked()
		if gc == nil {
			q.active--
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		if slices%yieldEvery == 0 {
			// A task that keeps finding work would hold its processor
			// until the runtime preempts it, 10 ms later, while an event
			// loop back from epoll_wait waits for one to frame new
			// requests: let the loops in now and then.
			runtime.Gosched()
		}
	}
}

// yieldEvery is how many slices in a row a task runs before it lets other
// goroutines have its processor. Measured at -t 2 on 2 cores: yielding
// after every slice cost 5-15% of throughput at 200 connections against
// every 16th.
const yieldEvery = 16

// requeue puts gc (state stQueued) back after a slice with more to run.
func (s *gnetServer) requeue(gc *gconn) {
	s.parked.mu.Lock()
	s.parked.pushLocked(gc, true)
	s.parked.mu.Unlock()
}

// runSliceSafely runs a slice of gc; a panic outside the session's own
// recovery is logged and closes gc, so it never strands the connection or
// the task.
func (s *gnetServer) runSliceSafely(gc *gconn) {
	defer func() {
		if p := recover(); p != nil {
			reportPanic(s.log, &s.panics, p, "connection slice panicked; closing its connection")
			gc.abandon()
		}
	}()
	gc.runSlice()
}

// load reports the parked connections and the tasks running.
func (q *parkedQueue) load() (queued int64, running int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(q.fresh.n + q.yielded.n), q.active
}
