package reactor

import (
	"fmt"
	"testing"
)

// TestExecStateTransitions drives every transition of connstate.go from
// the states it can meet, closes (letGo: the peer closed, or shutdown
// drains the connection) and stops (a request or the server closed it)
// included in every state.
func TestExecStateTransitions(t *testing.T) {
	idle, queued, running, blocked := execState{state: stIdle}, execState{state: stQueued}, execState{state: stRunning}, execState{state: stBlocked}
	with := func(x execState, f func(*execState)) execState { f(&x); return x }
	owed := func(x *execState) { x.owed = true }
	detached := func(x *execState) { x.detached = true }
	stopped := func(x *execState) { x.stop = true }
	det := func(x execState) execState { return with(x, detached) }
	stop := func(x execState) execState { return with(x, stopped) }
	fin := func(x execState) execState { x.finished = true; return x }

	tests := []struct {
		name     string
		from     execState
		ev       func(*execState) step
		want     execState
		wantStep step
	}{
		// The loop framed requests (pool).
		{"framed idle", idle, func(x *execState) step { return x.framed(true) }, queued, stepDispatch},
		{"framed idle nothing", idle, func(x *execState) step { return x.framed(false) }, idle, stepNone},
		{"framed queued", queued, func(x *execState) step { return x.framed(true) }, queued, stepNone},
		{"framed running", running, func(x *execState) step { return x.framed(true) }, running, stepNone},
		{"framed blocked", blocked, func(x *execState) step { return x.framed(true) }, blocked, stepNone},
		{"framed detached", det(idle), func(x *execState) step { return x.framed(true) }, det(idle), stepNone},
		{"framed stopped", stop(idle), func(x *execState) step { return x.framed(true) }, stop(idle), stepNone},

		// A task takes the connection (pool).
		{"take work", queued, func(x *execState) step { return takeStep(x.take(true)) }, running, stepNone},
		{"take nothing", queued, func(x *execState) step { return takeStep(x.take(false)) }, idle, stepNone},
		{"take nothing detached", det(queued), func(x *execState) step { return takeStep(x.take(false)) }, fin(det(idle)), stepFinish},
		{"take stopped", stop(queued), func(x *execState) step { return takeStep(x.take(true)) }, stop(idle), stepNone},
		{"take stopped detached", stop(det(queued)), func(x *execState) step { return takeStep(x.take(true)) }, fin(stop(det(idle))), stepFinish},

		// An executor ends a slice.
		{"slice done", running, func(x *execState) step { return x.sliceDone(false, false) }, idle, stepNone},
		{"slice more", running, func(x *execState) step { return x.sliceDone(false, true) }, queued, stepRequeue},
		{"slice blocked", running, func(x *execState) step { return x.sliceDone(true, true) }, blocked, stepNone},
		{"slice blocked, writer drained meanwhile", with(running, owed), func(x *execState) step { return x.sliceDone(true, false) }, queued, stepRequeue},
		{"slice done detached", det(running), func(x *execState) step { return x.sliceDone(false, false) }, fin(det(idle)), stepFinish},
		{"slice more detached", det(running), func(x *execState) step { return x.sliceDone(false, true) }, det(queued), stepRequeue},
		{"slice stopped", stop(running), func(x *execState) step { return x.sliceDone(true, true) }, stop(idle), stepNone},
		{"slice stopped detached", stop(det(running)), func(x *execState) step { return x.sliceDone(false, true) }, fin(stop(det(idle))), stepFinish},

		// The inline executor stops for its writer.
		{"block", idle, func(x *execState) step { return boolStep(x.block()) }, blocked, stepWake},
		{"block, writer drained meanwhile", with(idle, owed), func(x *execState) step { return boolStep(x.block()) }, idle, stepNone},

		// The writer drained.
		{"drained blocked pool", blocked, func(x *execState) step { return x.drained(true) }, queued, stepDispatch},
		{"drained blocked inline", blocked, func(x *execState) step { return x.drained(false) }, idle, stepWake},
		{"drained blocked inline detached", det(blocked), func(x *execState) step { return x.drained(false) }, det(running), stepRunLeftover},
		{"drained blocked pool stopped", stop(blocked), func(x *execState) step { return x.drained(true) }, stop(queued), stepDispatch},
		{"drained running", running, func(x *execState) step { return x.drained(true) }, with(running, owed), stepNone},
		{"drained idle", idle, func(x *execState) step { return x.drained(false) }, with(idle, owed), stepNone},
		{"drained queued", queued, func(x *execState) step { return x.drained(true) }, with(queued, owed), stepNone},

		// gnet lets go (peer close, or shutdown), in every state.
		{"let go idle work pool", idle, func(x *execState) step { return x.letGo(true, true) }, det(queued), stepDispatch},
		{"let go idle work inline", idle, func(x *execState) step { return x.letGo(true, false) }, det(running), stepRunLeftover},
		{"let go idle no work", idle, func(x *execState) step { return x.letGo(false, true) }, fin(det(idle)), stepFinish},
		{"let go idle stopped", stop(idle), func(x *execState) step { return x.letGo(true, true) }, fin(stop(det(idle))), stepFinish},
		{"let go queued", queued, func(x *execState) step { return x.letGo(true, true) }, det(queued), stepNone},
		{"let go running", running, func(x *execState) step { return x.letGo(true, true) }, det(running), stepNone},
		{"let go blocked", blocked, func(x *execState) step { return x.letGo(true, false) }, det(blocked), stepNone},
		{"let go twice", det(idle), func(x *execState) step { return x.letGo(true, true) }, det(idle), stepNone},
		{"let go queued stopped", stop(queued), func(x *execState) step { return x.letGo(true, true) }, stop(det(queued)), stepNone},
		{"let go running stopped", stop(running), func(x *execState) step { return x.letGo(false, true) }, stop(det(running)), stepNone},
		{"let go blocked stopped", stop(blocked), func(x *execState) step { return x.letGo(true, true) }, stop(det(blocked)), stepNone},

		// An executor is done for now.
		{"idle", running, func(x *execState) step { return x.idle(false) }, idle, stepNone},
		{"idle detached", det(running), func(x *execState) step { return x.idle(false) }, fin(det(idle)), stepFinish},
		{"idle detached work left", det(running), func(x *execState) step { return x.idle(true) }, det(idle), stepNone},
		{"idle finished", fin(det(running)), func(x *execState) step { return x.idle(false) }, fin(det(idle)), stepNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tc.from
			got := tc.ev(&x)
			if x != tc.want || got != tc.wantStep {
				t.Errorf("from %s: got %s, step %s; want %s, step %s", show(tc.from), show(x), got, show(tc.want), tc.wantStep)
			}
		})
	}
}

func takeStep(ok bool, st step) step {
	if ok {
		return stepNone
	}
	return st
}

// boolStep maps block's answer to a step for the table: true (blocked) as
// stepWake, meaning "waits for the writer's wake-up".
func boolStep(blocked bool) step {
	if blocked {
		return stepWake
	}
	return stepNone
}

func show(x execState) string {
	return fmt.Sprintf("{%s owed=%v detached=%v stop=%v finished=%v}", x.state, x.owed, x.detached, x.stop, x.finished)
}

// TestExecStateLostWakeup replays, step by step, the interleavings in which
// the writer drains between an executor's blocked write and its recording
// that it stopped: the executor must go on, not wait for a resume that
// already happened (dropping owed parks such a connection forever).
func TestExecStateLostWakeup(t *testing.T) {
	t.Run("pool", func(t *testing.T) {
		x := execState{state: stQueued}
		if ok, _ := x.take(true); !ok {
			t.Fatal("take found nothing")
		}
		// The worker's write reported blocked; before it takes the lock,
		// the loop or the drainer empties the queue and calls drained.
		if st := x.drained(true); st != stepNone || !x.owed {
			t.Fatalf("drained while running: step %s, %s", st, show(x))
		}
		if st := x.sliceDone(true, false); st != stepRequeue || x.state != stQueued || x.owed {
			t.Fatalf("slice ended blocked after the drain: step %s, %s; want requeue", st, show(x))
		}
	})
	t.Run("pool, drain after the stop", func(t *testing.T) {
		x := execState{state: stRunning}
		if st := x.sliceDone(true, false); st != stepNone || x.state != stBlocked {
			t.Fatalf("slice ended blocked: step %s, %s", st, show(x))
		}
		if st := x.drained(true); st != stepDispatch || x.state != stQueued {
			t.Fatalf("drained while blocked: step %s, %s; want dispatch", st, show(x))
		}
	})
	t.Run("inline", func(t *testing.T) {
		x := execState{state: stIdle}
		if st := x.drained(false); st != stepNone || !x.owed {
			t.Fatalf("drained while the loop runs: step %s, %s", st, show(x))
		}
		if x.block() {
			t.Fatalf("block after the drain waits: %s", show(x))
		}
	})
	t.Run("detached inline", func(t *testing.T) {
		x := execState{state: stIdle}
		if st := x.letGo(true, false); st != stepRunLeftover {
			t.Fatalf("let go with work: step %s", st)
		}
		if !x.block() {
			t.Fatal("block without a drain goes on")
		}
		if st := x.drained(false); st != stepRunLeftover || x.state != stRunning {
			t.Fatalf("drained: step %s, %s; want run-leftover", st, show(x))
		}
		if st := x.idle(false); st != stepFinish || !x.finished {
			t.Fatalf("done: step %s, %s; want finish", st, show(x))
		}
		if st := x.idle(false); st != stepNone {
			t.Fatalf("finished twice: step %s", st)
		}
	})
}

// TestWriterStateTransitions drives every transition of the writer's state
// (writerState) from the states it can meet, attached and detached, with
// a resume owed, after a failure and while closing; the lost wake-ups
// included: a resume owed is paid by whoever empties the queue, and a waker
// that finds gnet let go while it waited becomes the drainer.
func TestWriterStateTransitions(t *testing.T) {
	at := func(o outState) writerState { return writerState{out: o, attached: true} }
	det := func(o outState) writerState { return writerState{out: o} }
	with := func(x writerState, f func(*writerState)) writerState { f(&x); return x }
	owed := func(x *writerState) { x.blocked = true }
	failed := func(x *writerState) { x.failed = true }
	closing := func(x *writerState) { x.closing = true }
	closed := func(x *writerState) { x.closing, x.closed = true, true }

	tests := []struct {
		name   string
		from   writerState
		ev     func(*writerState) fx
		want   writerState
		wantFx fx
	}{
		{"queued idle attached", at(outIdle), func(x *writerState) fx { return x.queued(false) }, at(outListed), fxList},
		{"queued idle attached full", at(outIdle), func(x *writerState) fx { return x.queued(true) }, at(outWaiting), fxWait},
		{"queued idle detached", det(outIdle), func(x *writerState) fx { return x.queued(false) }, det(outDraining), fxDrain},
		{"queued listed", at(outListed), func(x *writerState) fx { return x.queued(false) }, at(outListed), 0},
		{"queued waiting", at(outWaiting), func(x *writerState) fx { return x.queued(false) }, at(outWaiting), 0},
		{"queued draining", det(outDraining), func(x *writerState) fx { return x.queued(false) }, det(outDraining), 0},

		{"loop wrote all", at(outListed), func(x *writerState) fx { return x.loopWrote(false) }, at(outIdle), 0},
		{"loop wrote all, resume owed", with(at(outListed), owed), func(x *writerState) fx { return x.loopWrote(false) }, at(outIdle), fxResume},
		{"loop found the socket full", with(at(outListed), owed), func(x *writerState) fx { return x.loopWrote(true) }, with(at(outWaiting), owed), fxWait},
		{"loop write failed, socket full", with(with(at(outListed), owed), failed), func(x *writerState) fx { return x.loopWrote(true) }, with(at(outIdle), failed), fxDrop | fxResume},
		{"loop write error", with(with(at(outListed), owed), failed), func(x *writerState) fx { return x.loopWrote(false) }, with(at(outIdle), failed), fxDrop | fxResume},

		{"writable attached", at(outWaiting), func(x *writerState) fx { return x.writable(true) }, at(outListed), fxList},
		{"writable detached: waker drains", det(outWaiting), func(x *writerState) fx { return x.writable(true) }, det(outDraining), fxDrain},
		{"writable nothing queued", with(at(outWaiting), owed), func(x *writerState) fx { return x.writable(false) }, at(outIdle), fxResume},
		{"wait failed", with(with(det(outWaiting), failed), closing), func(x *writerState) fx { return x.writable(true) }, with(with(det(outIdle), failed), closed), fxDrop | fxClose},

		{"leave idle", at(outIdle), func(x *writerState) fx { return x.leave() }, det(outIdle), 0},
		{"leave listed: drainer takes it", at(outListed), func(x *writerState) fx { return x.leave() }, det(outDraining), fxDrain},
		{"leave waiting: waker drains later", at(outWaiting), func(x *writerState) fx { return x.leave() }, det(outWaiting), 0},
		{"leave twice", det(outDraining), func(x *writerState) fx { return x.leave() }, det(outDraining), 0},
		{"loop turn after leave", det(outDraining), func(x *writerState) fx {
			if x.loopTurn() {
				return fxList
			}
			return 0
		}, det(outDraining), 0},

		{"drained", with(det(outDraining), owed), func(x *writerState) fx { return x.drained() }, det(outIdle), fxResume},
		{"drained closing", with(det(outDraining), closing), func(x *writerState) fx { return x.drained() }, with(det(outIdle), closed), fxClose},

		{"abandoned listed", with(at(outListed), owed), func(x *writerState) fx { return x.abandoned() }, with(at(outIdle), failed), fxDrop | fxResume},
		{"abandoned drained meanwhile", det(outDraining), func(x *writerState) fx { return x.abandoned() }, det(outDraining), 0},

		{"close idle", det(outIdle), func(x *writerState) fx { return x.closeWhenDone() }, with(det(outIdle), closed), fxClose},
		{"close draining", det(outDraining), func(x *writerState) fx { return x.closeWhenDone() }, with(det(outDraining), closing), 0},
		{"close twice", with(det(outIdle), closed), func(x *writerState) fx { return x.closeWhenDone() }, with(det(outIdle), closed), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tc.from
			got := tc.ev(&x)
			if x != tc.want || got != tc.wantFx {
				t.Fatalf("from %+v: got %+v, %v; want %+v, %v", tc.from, x, got, tc.want, tc.wantFx)
			}
		})
	}
}

// TestRunStateTransitions drives every transition of a loop's runState.
func TestRunStateTransitions(t *testing.T) {
	none, armed, busy, both := runState{}, runState{armed: true}, runState{busy: true}, runState{armed: true, busy: true}
	tests := []struct {
		name    string
		from    runState
		ev      func(*runState) bool
		want    runState
		wantRun bool
	}{
		{"listed: asks", none, func(x *runState) bool { return x.listed() }, armed, true},
		{"listed, run asked: none", armed, func(x *runState) bool { return x.listed() }, armed, false},
		{"listed while busy: none", busy, func(x *runState) bool { return x.listed() }, busy, false},
		{"enter", none, func(x *runState) bool { x.enter(); return false }, busy, false},
		{"leave with work: runs now", busy, func(x *runState) bool { return x.leave(true) }, armed, true},
		{"leave without work", busy, func(x *runState) bool { return x.leave(false) }, none, false},
		{"leave, run asked before", both, func(x *runState) bool { return x.leave(true) }, armed, false},
		{"ran, more", armed, func(x *runState) bool { x.ran(true); return false }, armed, false},
		{"ran, done", armed, func(x *runState) bool { x.ran(false); return false }, none, false},
		{"dropped", armed, func(x *runState) bool { x.dropped(); return false }, none, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := tc.from
			got := tc.ev(&x)
			if x != tc.want || got != tc.wantRun {
				t.Fatalf("from %+v: got %+v, %v; want %+v, %v", tc.from, x, got, tc.want, tc.wantRun)
			}
		})
	}
}
