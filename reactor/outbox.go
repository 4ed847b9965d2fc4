package reactor

import (
	"context"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

// outbox carries pool workers' replies back to one event loop. A worker
// queues a reply; the first reply into an empty outbox schedules one task on
// the loop (EventLoop.Execute), which writes every reply queued by then, in
// queue order. Under load one wake-up of the loop thus carries the replies
// of many connections, where gnet's AsyncWrite costs a task, a wake-up check
// and three allocations per reply; Execute costs two per task.
//
// Replies of one connection are queued by one worker at a time, in request
// order, so the loop writes them in that order. A connection to be closed
// after its reply is closed by the same task, after the write, so the close
// cannot overtake the reply.
type outbox struct {
	loop gnet.EventLoop

	mu    sync.Mutex
	queue []reply // guarded by mu
	armed bool    // guarded by mu: a flush task is scheduled on the loop
	spare []reply // loop-owned: the previous queue, reused
}

// reply is one batch's output: out[off:] is still to be written; out is
// recycled after the write.
type reply struct {
	gc        *gconn
	out       []byte
	off       int
	closeConn bool
}

// push queues a reply and schedules a flush unless one is pending.
func (o *outbox) push(r reply) {
	o.mu.Lock()
	o.queue = append(o.queue, r)
	arm := !o.armed
	o.armed = true
	o.mu.Unlock()
	if !arm {
		return
	}
	if err := o.loop.Execute(context.Background(), o); err != nil {
		// Only a stopping engine refuses tasks: drop what is queued, as the
		// engine is about to close every connection.
		q := o.take(nil)
		for i := range q {
			q[i].gc.flushed(q[i].out, false)
		}
	}
}

// take empties the outbox, leaving next as its queue, and disarms it.
func (o *outbox) take(next []reply) []reply {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := o.queue
	o.queue, o.armed = next, false
	return q
}

// Run writes every queued reply. It runs on the loop.
func (o *outbox) Run(context.Context) error {
	q := o.take(o.spare[:0])
	for i := range q {
		q[i].gc.flush(q[i])
		q[i] = reply{}
	}
	o.spare = q[:0]
	return nil
}

// outboxes holds one outbox per event loop, made on a loop's first
// connection.
type outboxes struct {
	mu    sync.Mutex
	boxes map[gnet.EventLoop]*outbox // guarded by mu
}

func (b *outboxes) of(loop gnet.EventLoop) *outbox {
	b.mu.Lock()
	defer b.mu.Unlock()
	o := b.boxes[loop]
	if o == nil {
		if b.boxes == nil {
			b.boxes = make(map[gnet.EventLoop]*outbox)
		}
		o = &outbox{loop: loop}
		b.boxes[loop] = o
	}
	return o
}
