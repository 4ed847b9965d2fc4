package reactor

// execState is where a gnet connection's execution stands: every
// transition of it is a method here, and gconn only carries out the step a
// transition returns. It is guarded by gconn.mu: every method expects the
// caller to hold it.
//
// The states (connState):
//
//	idle     nothing runs; framed work, if any, is not handed out yet
//	queued   handed to a task or parked for one (pool)
//	running  an executor runs it: a pool task, or the inline leftovers
//	         after the loop let go (inline's loop runs from idle)
//	blocked  its executor stopped until the writer's queue drains
//
// and three flags: detached (gnet let go of the connection: close or
// shutdown; nothing more is read or framed, what was read still runs),
// stop (a request or the server closed it: nothing more runs) and finished
// (released; terminal).
//
// The lost wake-up: a writer may drain (drained) while its executor is
// still running, after the write that blocked and before the executor
// records that it stopped. drained then leaves owed set, and the
// executor's stop (sliceDone, block) sees it and goes on instead of
// waiting for a resume that already happened.
type execState struct {
	state    connState
	owed     bool // the writer drained while the executor still ran
	detached bool
	stop     bool
	finished bool
}

// connState is where a connection's execution stands.
type connState uint8

const (
	stIdle connState = iota
	stQueued
	stRunning
	stBlocked
)

func (s connState) String() string {
	return [...]string{"idle", "queued", "running", "blocked"}[s]
}

// step is what the caller of a transition does next, outside the lock.
type step uint8

const (
	stepNone        step = iota
	stepDispatch         // hand the connection to a task (pool)
	stepRequeue          // park it again after a slice, for its next turn (pool)
	stepWake             // wake its loop to run it (inline)
	stepRunLeftover      // run its leftover input on this goroutine (inline, detached)
	stepFinish           // release it: nothing of it is left to run
)

func (s step) String() string {
	return [...]string{"none", "dispatch", "requeue", "wake", "run-leftover", "finish"}[s]
}

// framed: the loop framed requests (pool). work says some are pending.
func (x *execState) framed(work bool) step {
	if !work || x.state != stIdle || x.detached || x.stop {
		return stepNone
	}
	x.state = stQueued
	return stepDispatch
}

// take: a task starts on the connection (pool); it reports whether there
// is anything to run. work says requests are pending or, once detached,
// leftover input is. With nothing to run the connection goes idle (and the
// caller finishes it on stepFinish).
func (x *execState) take(work bool) (bool, step) {
	x.state = stRunning
	if work && !x.stop {
		return true, stepNone
	}
	return false, x.idle(false)
}

// sliceDone: an executor ended a slice (pool; the inline leftovers too).
// blocked says its writer is over the high-water mark, more that requests
// are left to run.
func (x *execState) sliceDone(blocked, more bool) step {
	switch {
	case x.stop:
		return x.idle(false)
	case blocked && !x.owed:
		x.state = stBlocked
		return stepNone
	case more || blocked:
		x.owed = false
		x.state = stQueued
		return stepRequeue
	}
	return x.idle(false)
}

// block: the inline executor stops for its writer. false: the writer
// drained meanwhile (owed), so it goes on.
func (x *execState) block() bool {
	if x.owed {
		x.owed = false
		return false
	}
	x.state = stBlocked
	return true
}

// drained: the writer's queue that blocked the executor drained. A blocked
// connection is rescheduled; a running one is told to go on (owed).
func (x *execState) drained(pool bool) step {
	if x.state != stBlocked {
		x.owed = true
		return stepNone
	}
	switch {
	case pool:
		x.state = stQueued // the task drops the work of a stopped one
		return stepDispatch
	case x.detached:
		x.state = stRunning
		return stepRunLeftover
	}
	x.state = stIdle
	return stepWake
}

// letGo: gnet let go of the connection (a close, or shutdown draining it).
// work says requests read before are still to run.
func (x *execState) letGo(work, pool bool) step {
	if x.detached {
		return stepNone
	}
	x.detached = true
	if x.state != stIdle {
		return stepNone // its executor or the writer's resume carries on
	}
	switch {
	case x.stop || !work:
		return x.idle(false)
	case pool:
		x.state = stQueued
		return stepDispatch
	}
	x.state = stRunning
	return stepRunLeftover
}

// idle: an executor is done with the connection for now; work says
// something is still to run (it is then not finished).
func (x *execState) idle(work bool) step {
	x.state = stIdle
	if !x.detached || x.finished || (work && !x.stop) {
		return stepNone
	}
	x.finished = true
	return stepFinish
}

// writerState is where a connection's writer stands (writer.go): who, if
// anyone, is to write its queue. Like execState it is guarded by gconn.mu
// (the writer's mu is the same mutex); every transition is a method here
// that returns the effects its caller carries out after it (fx).
//
// The writer rule: one writer at a time per connection, and while gnet
// holds the connection that writer is its event loop. The states (outState):
//
//	idle      nobody is to write: nothing queued, or the inline loop
//	          writes at once
//	listed    on the loop's writer list: its next run writes the queue
//	waiting   the socket refused bytes: a waker goroutine waits in Go's
//	          network poller for it to take more, then lists the writer
//	          again (it writes nothing itself)
//	draining  gnet let go of the connection: the drainer goroutine, the
//	          only writer from then on, writes the queue out
//
// and the flags attached (gnet holds the connection), blocked (an executor
// stopped for the queue: a resume is owed when it drains), failed (the peer
// is gone: queued and later replies are dropped), closing (close the
// descriptor once the queue is written) and closed.
//
// The lost wake-ups: blocked is set under the same mutex as the queue grows,
// so whoever empties the queue (idle) sees it and resumes the executor; the
// executor's own side (it may still be running when the resume comes) is
// execState.owed. A waker that finds gnet let go while it waited (leave
// does not wait for it) becomes the drainer: nobody else is started then.
type writerState struct {
	out      outState
	attached bool
	blocked  bool
	failed   bool
	closing  bool
	closed   bool
}

// outState is who is to write a connection's queue.
type outState uint8

const (
	outIdle outState = iota
	outListed
	outWaiting
	outDraining
)

func (s outState) String() string {
	return [...]string{"idle", "listed", "waiting", "draining"}[s]
}

// fx is the set of effects a writer transition asks of its caller.
type fx uint8

const (
	fxList   fx = 1 << iota // list the writer on its loop
	fxWait                  // start the waker (on the loop, which has the descriptor)
	fxDrain                 // start the drainer, or (from writable) go on as it
	fxDrop                  // drop the queue: the peer is gone
	fxResume                // resume the executor that blocked
	fxClose                 // close the writer's own descriptor
)

func (f fx) String() string {
	if f == 0 {
		return "none"
	}
	s := ""
	for i, n := range []string{"list", "wait", "drain", "drop", "resume", "close"} {
		if f&(1<<i) != 0 {
			if s != "" {
				s += "+"
			}
			s += n
		}
	}
	return s
}

// queued: replies were queued. full says the loop's own write found the
// socket full (inline mode), so it waits rather than lists.
func (x *writerState) queued(full bool) fx {
	if x.out != outIdle {
		return 0 // whoever is on it writes these too
	}
	switch {
	case !x.attached:
		x.out = outDraining
		return fxDrain
	case full:
		x.out = outWaiting
		return fxWait
	}
	x.out = outListed
	return fxList
}

// loopTurn: the loop's run reached the writer; it writes only a listed one
// (a writer listed before a leave is the drainer's since).
func (x *writerState) loopTurn() bool { return x.out == outListed && x.attached }

// loopWrote: the loop wrote what the socket took; full says it refused the
// rest.
func (x *writerState) loopWrote(full bool) fx {
	if full && !x.failed {
		x.out = outWaiting
		return fxWait
	}
	return x.idle()
}

// writable: the waker's wait ended (the socket takes bytes, or the wait
// failed: then failed is set). work says replies are queued.
func (x *writerState) writable(work bool) fx {
	switch {
	case !work || x.failed:
		return x.idle()
	case x.attached:
		x.out = outListed
		return fxList
	}
	x.out = outDraining
	return fxDrain
}

// leave: gnet let go of the connection; what was listed for the loop goes
// to the drainer (the loop's run skips it), a waiting waker becomes the
// drainer when its wait ends.
func (x *writerState) leave() fx {
	if !x.attached {
		return 0
	}
	x.attached = false
	if x.out == outListed {
		x.out = outDraining
		return fxDrain
	}
	return 0
}

// drained: the drainer found the queue empty, or the peer gone.
func (x *writerState) drained() fx { return x.idle() }

// abandoned: the loop will never run its list (the engine stopped).
func (x *writerState) abandoned() fx {
	if x.out != outListed {
		return 0
	}
	x.failed = true
	return x.idle()
}

// closeWhenDone: the connection is finished; the descriptor closes now, or
// once whoever writes the queue is done.
func (x *writerState) closeWhenDone() fx {
	if x.closed {
		return 0
	}
	x.closing = true
	if x.out == outIdle {
		x.closed = true
		return fxClose
	}
	return 0
}

// idle: nobody is to write any more.
func (x *writerState) idle() fx {
	x.out = outIdle
	var f fx
	if x.failed {
		f |= fxDrop
	}
	if x.blocked {
		x.blocked = false
		f |= fxResume
	}
	if x.closing && !x.closed {
		x.closed = true
		f |= fxClose
	}
	return f
}

// runState is whether an event loop's run of its writer list (loopOut) is
// asked for; guarded by loopOut.mu. The lost wake-up it prevents: a writer
// listed while a run is asked for but not started asks for none (that run
// takes it), one listed after the run took the list asks for the next; a
// writer listed while the loop yields to a worker it started (busy) is
// written when the loop comes back (leave), without a ring.
type runState struct {
	armed bool // a run is asked for and has not started
	busy  bool // the loop yields to a worker and runs the list after
}

// listed: a writer was listed; it reports whether the lister asks for a run.
func (x *runState) listed() bool {
	arm := !x.armed && !x.busy
	x.armed = x.armed || arm
	return arm
}

// enter: the loop yields to a worker it just started.
func (x *runState) enter() { x.busy = true }

// leave: the loop is back; it reports whether the loop runs the list now
// (work: writers were listed meanwhile, and no run was asked for).
func (x *runState) leave(work bool) bool {
	x.busy = false
	run := work && !x.armed
	x.armed = x.armed || run
	return run
}

// ran: a run ended; more says it asks for another (writers listed during
// it, or it stopped at its byte budget).
func (x *runState) ran(more bool) { x.armed = more }

// dropped: the loop refused the run (the engine stops); the list is dropped.
func (x *runState) dropped() { x.armed = false }
