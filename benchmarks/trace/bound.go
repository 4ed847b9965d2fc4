package trace

import (
	"container/heap"
	"container/list"
	"fmt"
	"io"
)

// Policy names an offline model of a cache of same-size items, for
// Simulate: what a policy can reach on a trace at a given item count,
// independent of any server's memory layout (issue #24's stretch goal asks
// for 0.02 over memcached at equal RSS; the bound says at which item counts
// any policy could give it).
type Policy string

// The policies Simulate knows.
const (
	// LRU evicts the least recently used item.
	LRU Policy = "lru"
	// ARC is the adaptive replacement cache of Megiddo and Modha (FAST
	// 2003): a recency list and a frequency list whose split adapts to
	// hits in the ghost lists of both.
	ARC Policy = "arc"
	// MIN is Belady's offline optimum for same-size items: on a miss, of
	// the resident items and the new one, the one used again farthest in
	// the future (or never) leaves. No policy hits more.
	MIN Policy = "min"
)

// Load reads every key of st (a Stream, an ARCReader) into memory, for
// Simulate. On an error it returns the keys read before it.
func Load(st interface{ Next() (uint64, error) }) ([]uint64, error) {
	var keys []uint64
	for {
		k, err := st.Next()
		if err == io.EOF {
			return keys, nil
		}
		if err != nil {
			return keys, err
		}
		keys = append(keys, k)
	}
}

// Simulate runs keys, in order, through an empty cache of capacity items
// under p and reports which accesses hit. Every miss is offered to the
// cache, as a look-aside client sets what it missed (MIN may decline it).
func Simulate(keys []uint64, capacity int, p Policy) ([]bool, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("trace: capacity %d: want at least 1 item", capacity)
	}
	switch p {
	case LRU:
		return simulateLRU(keys, capacity), nil
	case ARC:
		return simulateARC(keys, capacity), nil
	case MIN:
		return simulateMIN(keys, capacity), nil
	}
	return nil, fmt.Errorf("trace: unknown policy %q (want lru, arc or min)", p)
}

func simulateLRU(keys []uint64, capacity int) []bool {
	hit := make([]bool, len(keys))
	order := list.New() // front: most recent
	at := make(map[uint64]*list.Element, capacity)
	for i, k := range keys {
		if e, ok := at[k]; ok {
			hit[i] = true
			order.MoveToFront(e)
			continue
		}
		if order.Len() == capacity {
			delete(at, order.Remove(order.Back()).(uint64))
		}
		at[k] = order.PushFront(k)
	}
	return hit
}

// arc is the state of the ARC model: resident lists t1 (seen once
// recently) and t2 (seen at least twice), ghost lists b1 and b2 (keys
// recently evicted from t1 and t2), and p, the target size of t1.
type arc struct {
	c, p           int
	t1, t2, b1, b2 *list.List // front: most recent
	where          map[uint64]arcEntry
}

type arcEntry struct {
	l *list.List
	e *list.Element
}

func simulateARC(keys []uint64, capacity int) []bool {
	a := &arc{c: capacity, t1: list.New(), t2: list.New(), b1: list.New(), b2: list.New(),
		where: make(map[uint64]arcEntry, 2*capacity)}
	hit := make([]bool, len(keys))
	for i, k := range keys {
		hit[i] = a.access(k)
	}
	return hit
}

// access is one request of ARC (the paper's cases I-IV); it reports a hit.
func (a *arc) access(k uint64) bool {
	w, ok := a.where[k]
	switch {
	case ok && (w.l == a.t1 || w.l == a.t2):
		a.move(k, w, a.t2)
		return true
	case ok && w.l == a.b1:
		a.p = min(a.c, a.p+max(a.b2.Len()/a.b1.Len(), 1))
		a.replace(false)
		a.move(k, w, a.t2)
		return false
	case ok: // in b2
		a.p = max(0, a.p-max(a.b1.Len()/a.b2.Len(), 1))
		a.replace(true)
		a.move(k, w, a.t2)
		return false
	}
	if l1 := a.t1.Len() + a.b1.Len(); l1 == a.c {
		if a.t1.Len() < a.c {
			a.dropLRU(a.b1)
			a.replace(false)
		} else {
			a.dropLRU(a.t1)
		}
	} else if total := l1 + a.t2.Len() + a.b2.Len(); total >= a.c {
		if total == 2*a.c {
			a.dropLRU(a.b2)
		}
		a.replace(false)
	}
	a.where[k] = arcEntry{a.t1, a.t1.PushFront(k)}
	return false
}

// replace makes room in t1 + t2 by moving the least recent item of t1 or
// t2 to its ghost list, t1's when t1 is above its target p (or at it, for
// a key found in b2).
func (a *arc) replace(inB2 bool) {
	if a.t1.Len()+a.t2.Len() < a.c {
		return
	}
	if a.t1.Len() > 0 && (a.t1.Len() > a.p || (inB2 && a.t1.Len() == a.p)) {
		a.demote(a.t1, a.b1)
	} else {
		a.demote(a.t2, a.b2)
	}
}

func (a *arc) move(k uint64, w arcEntry, to *list.List) {
	w.l.Remove(w.e)
	a.where[k] = arcEntry{to, to.PushFront(k)}
}

func (a *arc) demote(from, to *list.List) {
	k := from.Remove(from.Back()).(uint64)
	a.where[k] = arcEntry{to, to.PushFront(k)}
}

func (a *arc) dropLRU(l *list.List) {
	delete(a.where, l.Remove(l.Back()).(uint64))
}

// never is the next use of a key that is not used again.
const never = int(^uint(0) >> 1)

func simulateMIN(keys []uint64, capacity int) []bool {
	next := make([]int, len(keys)) // next[i]: the next access to keys[i]
	last := make(map[uint64]int)
	for i := len(keys) - 1; i >= 0; i-- {
		next[i] = never
		if j, ok := last[keys[i]]; ok {
			next[i] = j
		}
		last[keys[i]] = i
	}
	hit := make([]bool, len(keys))
	resident := make(map[uint64]int, capacity) // key -> its next use
	var h useHeap                              // resident keys by next use, stale entries skipped
	for i, k := range keys {
		if _, ok := resident[k]; ok {
			hit[i] = true
		} else {
			if next[i] == never {
				continue // not used again: never worth a place
			}
			if len(resident) == capacity {
				top := h.farthest(resident)
				if top.next <= next[i] {
					continue // the newcomer is needed last: it is the one to drop
				}
				heap.Pop(&h)
				delete(resident, top.key)
			}
		}
		if next[i] == never {
			delete(resident, k)
			continue
		}
		resident[k] = next[i]
		heap.Push(&h, use{next[i], k})
	}
	return hit
}

type use struct {
	next int
	key  uint64
}

// useHeap is a max-heap of resident keys by next use. A key's entry goes
// stale when it is used (a new one is pushed) or dropped; farthest skips
// those.
type useHeap []use

func (h useHeap) Len() int           { return len(h) }
func (h useHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h useHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *useHeap) Push(x any)        { *h = append(*h, x.(use)) }
func (h *useHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// farthest returns the live entry used farthest in the future, popping
// stale ones above it; it stays on the heap.
func (h *useHeap) farthest(resident map[uint64]int) use {
	for {
		top := (*h)[0]
		if n, ok := resident[top.key]; ok && n == top.next {
			return top
		}
		heap.Pop(h)
	}
}
