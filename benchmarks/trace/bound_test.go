package trace

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSimulate(t *testing.T) {
	tests := []struct {
		name     string
		policy   Policy
		capacity int
		keys     []uint64
		want     []bool
	}{
		{"lru evicts the least recent", LRU, 2, []uint64{1, 2, 1, 3, 2}, []bool{false, false, true, false, false}},
		{"lru of one item", LRU, 1, []uint64{1, 1, 2, 1}, []bool{false, true, false, false}},
		{"min declines a key never used again", MIN, 2, []uint64{1, 2, 3, 1, 2}, []bool{false, false, false, true, true}},
		{"min drops the key used farthest ahead", MIN, 2, []uint64{1, 2, 3, 1, 3, 2}, []bool{false, false, false, true, true, false}},
		{"min frees a slot at a key's last use", MIN, 1, []uint64{1, 1, 2, 2}, []bool{false, true, false, true}},
		{"arc keeps a twice-seen key through a scan", ARC, 2, []uint64{1, 1, 2, 3, 4, 1}, []bool{false, true, false, false, false, true}},
		{"lru loses it to the scan", LRU, 2, []uint64{1, 1, 2, 3, 4, 1}, []bool{false, true, false, false, false, false}},
		{"arc misses a cyclic scan larger than itself", ARC, 2, []uint64{1, 2, 3, 1, 2, 3}, make([]bool, 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Simulate(tt.keys, tt.capacity, tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s capacity %d keys %v: hits %v, want %v", tt.policy, tt.capacity, tt.keys, got, tt.want)
			}
		})
	}
}

func TestSimulateRefuses(t *testing.T) {
	if _, err := Simulate([]uint64{1}, 0, LRU); err == nil {
		t.Error("capacity 0: no error")
	}
	if _, err := Simulate([]uint64{1}, 1, "lfu"); err == nil {
		t.Error("unknown policy: no error")
	}
}

// TestMINIsOptimal checks MIN against an exhaustive search of every choice
// (keep or decline a missed key, and which resident to drop) on short
// random traces, and that LRU and ARC never beat it.
func TestMINIsOptimal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 300 {
		keys := make([]uint64, 4+r.IntN(9))
		for i := range keys {
			keys[i] = uint64(r.IntN(5))
		}
		capacity := 1 + r.IntN(3)
		got := count(mustSimulate(t, keys, capacity, MIN))
		if want := bestHits(keys, capacity, nil); got != want {
			t.Fatalf("trial %d: MIN hits %d on %v at capacity %d, exhaustive search %d", trial, got, keys, capacity, want)
		}
		for _, p := range []Policy{LRU, ARC} {
			if n := count(mustSimulate(t, keys, capacity, p)); n > got {
				t.Fatalf("trial %d: %s hits %d on %v at capacity %d, above MIN's %d", trial, p, n, keys, capacity, got)
			}
		}
	}
}

// TestPoliciesOnALongTrace runs every policy on a skewed stream with a
// cyclic scan mixed in: MIN hits most, and ARC, which resists the scan,
// at least as often as LRU.
func TestPoliciesOnALongTrace(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 20_000)
	for i := range keys {
		if i%3 == 0 {
			keys[i] = 1_000 + uint64(i/3%500) // the scan
		} else {
			keys[i] = uint64(r.IntN(40) * r.IntN(40) / 10) // a skewed hot set
		}
	}
	hits := map[Policy]int{}
	for _, p := range []Policy{LRU, ARC, MIN} {
		hits[p] = count(mustSimulate(t, keys, 100, p))
	}
	if hits[MIN] < hits[ARC] || hits[ARC] < hits[LRU] {
		t.Errorf("hits %v: want min >= arc >= lru", hits)
	}
}

func mustSimulate(t *testing.T, keys []uint64, capacity int, p Policy) []bool {
	t.Helper()
	hit, err := Simulate(keys, capacity, p)
	if err != nil {
		t.Fatal(err)
	}
	return hit
}

func count(hit []bool) int {
	n := 0
	for _, h := range hit {
		if h {
			n++
		}
	}
	return n
}

// bestHits is the most hits any policy gets on keys from the resident set
// held, by trying every choice at every miss.
func bestHits(keys []uint64, capacity int, held []uint64) int {
	if len(keys) == 0 {
		return 0
	}
	k, rest := keys[0], keys[1:]
	if slices.Contains(held, k) {
		return 1 + bestHits(rest, capacity, held)
	}
	best := bestHits(rest, capacity, held) // decline it
	if len(held) < capacity {
		return max(best, bestHits(rest, capacity, append(slices.Clone(held), k)))
	}
	for i := range held {
		next := slices.Clone(held)
		next[i] = k
		best = max(best, bestHits(rest, capacity, next))
	}
	return best
}
