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
