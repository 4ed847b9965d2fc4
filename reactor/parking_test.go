package reactor

import "testing"

func TestParkingFIFO(t *testing.T) {
	p := newParking()
	a, b, c := &gconn{}, &gconn{}, &gconn{}
	p.push(a)
	p.push(b)
	if got := p.pop(); got != a {
		t.Fatalf("pop = %p, want the oldest %p", got, a)
	}
	p.unpop(a)
	p.push(c)
	for i, want := range []*gconn{a, b, c} {
		if got := p.pop(); got != want {
			t.Fatalf("pop %d = %p, want %p", i, got, want)
		}
	}
	if p.pop() != nil || p.len() != 0 {
		t.Fatalf("parking not empty after popping everything")
	}
	p.unpop(b) // front insert into an empty queue
	if p.len() != 1 || p.pop() != b {
		t.Fatalf("unpop into an empty queue lost the connection")
	}
}

func TestParkingReusesStorage(t *testing.T) {
	p := newParking()
	a := &gconn{}
	allocs := testing.AllocsPerRun(100, func() {
		p.push(a)
		p.push(a)
		p.pop()
		p.pop()
	})
	if allocs != 0 {
		t.Fatalf("push/pop allocates %.1f times per round, want 0", allocs)
	}
}
