package reactor

import (
	"context"
	"sync"
	"time"
)

// parking holds pool-mode connections that have work but found every worker
// busy. Finishing workers pop them; a retry loop resubmits them in case every
// worker finished between the failed submit and the push.
type parking struct {
	mu     sync.Mutex
	conns  []*gconn // guarded by mu: conns[head:] are parked, oldest first
	head   int      // guarded by mu
	signal chan struct{}
}

func newParking() *parking {
	return &parking{signal: make(chan struct{}, 1)}
}

func (p *parking) push(gc *gconn) {
	p.mu.Lock()
	p.conns = append(p.conns, gc)
	p.mu.Unlock()
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

func (p *parking) pop() *gconn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.conns) {
		return nil
	}
	gc := p.conns[p.head]
	p.conns[p.head] = nil
	p.head++
	if p.head == len(p.conns) {
		// Empty: reuse the backing array from its start.
		p.conns, p.head = p.conns[:0], 0
	}
	return gc
}

// unpop puts gc back at the front.
func (p *parking) unpop(gc *gconn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head > 0 {
		p.head--
		p.conns[p.head] = gc
		return
	}
	p.conns = append([]*gconn{gc}, p.conns...)
}

func (p *parking) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) - p.head
}

// retryLoop resubmits parked connections until ctx ends. It sleeps while
// nothing is parked and polls every millisecond while something is.
func (p *parking) retryLoop(ctx context.Context, ex Executor) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.signal:
		}
		for p.len() > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
			p.resubmit(ex)
		}
	}
}

// resubmit hands parked connections to ex until it refuses one.
func (p *parking) resubmit(ex Executor) {
	for {
		gc := p.pop()
		if gc == nil {
			return
		}
		if err := ex.Submit(gc); err != nil {
			// Still busy: put it back at the front and wait for the next tick.
			p.unpop(gc)
			return
		}
	}
}
