package reactor

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/tandemcache/tandem/workerpool"
)

// fakeExec accepts tasks for the test to run by hand, and refuses the next
// fail submits as a full pool does.
type fakeExec struct {
	fail  int
	tasks []Task
}

var errBusy = errors.New("busy")

func (e *fakeExec) Submit(t Task) error {
	if e.fail > 0 {
		e.fail--
		return errBusy
	}
	e.tasks = append(e.tasks, t)
	return nil
}

// runAll runs the accepted tasks, in order, until none is left.
func (e *fakeExec) runAll() int {
	n := 0
	for len(e.tasks) > 0 {
		t := e.tasks[0]
		e.tasks = e.tasks[1:]
		t.Run()
		n++
	}
	return n
}

// TestDispatch drives pool mode's hand-off with an executor the test runs
// by hand, so that each interleaving of a loop parking a connection with
// the tasks' last look at the queue happens in a fixed order. A connection
// here has nothing framed: its slice only moves it from queued to idle.
func TestDispatch(t *testing.T) {
	tests := []struct {
		name string
		// running: tasks already submitted that will still look at the
		// queue (active); fail: submits the pool refuses next.
		running, fail int
		conns         int
		wantTasks     int // tasks started for the table's connections
	}{
		// The first connection gets a task; the second is parked for it
		// (its task has not looked at the queue yet), not given a worker.
		{name: "idle pool", conns: 2, wantTasks: 1},
		// One task runs: the first connection is parked for it without a
		// submit, the second is submitted and refused (the pool is full).
		{name: "busy pool: a running task takes the parked connections", running: 1, fail: 1, conns: 2, wantTasks: 0},
		// One task runs and the pool has room: the first connection waits
		// for the running task, the second gets a worker of its own.
		{name: "a running task and room in the pool", running: 1, conns: 2, wantTasks: 1},
		// Every worker has looked at the queue for the last time but has
		// not yet returned to the pool: the submit fails and no task would
		// ever look again (the lost wake-up). The loop must start one.
		{name: "workers between their last look and the pool", running: 0, fail: 1, conns: 1, wantTasks: 1},
		{name: "the retry itself finds the pool full for a while", running: 0, fail: 5, conns: 1, wantTasks: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ex := &fakeExec{}
			s := &gnetServer{cfg: Config{Executor: ex}, log: zerolog.Nop(), pool: true}
			var pre *gconn
			if tc.running > 0 {
				// A task already in flight for another connection.
				pre = &gconn{s: s, pending: &batch{}, execState: execState{state: stQueued}}
				if !s.dispatch(pre) {
					t.Fatal("the first dispatch did not start a task")
				}
			}
			ex.fail = tc.fail
			conns := make([]*gconn, tc.conns)
			for i := range conns {
				conns[i] = &gconn{s: s, pending: &batch{}, execState: execState{state: stQueued}}
				s.dispatch(conns[i])
			}
			ran := ex.runAll()
			if pre != nil {
				ran-- // the task started before the table's submits
			}
			if ran != tc.wantTasks {
				t.Errorf("tasks run = %d, want %d", ran, tc.wantTasks)
			}
			for i, gc := range conns {
				if gc.state != stIdle {
					t.Errorf("connection %d left in state %d, want idle (%d): stranded", i, gc.state, stIdle)
				}
			}
			if queued, active := s.parked.load(); queued != 0 || active != 0 {
				t.Errorf("after every task returned: %d parked, %d active, want 0 and 0", queued, active)
			}
		})
	}
}

// TestPoolOverloadsAreCounted: with more connections executing than the
// pool has workers, the pool reports overloads, the extra connections wait
// parked, and every request is answered once the workers are free.
func TestPoolOverloadsAreCounted(t *testing.T) {
	release := make(chan struct{})
	var p *workerpool.Pool
	srv := startTest(t, ModePool, func(c *Config) {
		var err error
		p, err = workerpool.New(workerpool.Config{Workers: 1, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Release(time.Second) })
		c.Executor, c.Workers = poolExec{p}, 1
		c.NewSession = func(net.Addr) Session { return blockSession{release: release} }
	})
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.DialTimeout("tcp", srv.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "block\n")
		conns = append(conns, c)
	}
	for i := 0; srv.Stats().Parked < 2; i++ {
		if i == 10_000 {
			close(release)
			t.Fatalf("2 connections not parked behind the one worker: %+v", srv.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for i, c := range conns {
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "R:block\n" {
			t.Fatalf("connection %d: %q, %v", i, line, err)
		}
	}
	// The second connection waits for the running task without a submit;
	// the third finds the pool full.
	if p.Overloads() < 1 {
		t.Errorf("pool overloads = %d, want >= 1", p.Overloads())
	}
}
