package cache

import (
	clist "container/list"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// zipf draws ranks in [0, n) with P(i) proportional to 1/(i+1)^theta, for theta < 1 too
// (math/rand's Zipf needs s > 1). Gray et al., "Quickly generating billion-record synthetic
// databases", as used by YCSB.
type zipf struct {
	rng                      *rand.Rand
	n                        float64
	theta, alpha, zetan, eta float64
	half                     float64
}

func newZipf(rng *rand.Rand, n int, theta float64) *zipf {
	var zetan, zeta2 float64
	for i := 1; i <= n; i++ {
		zetan += 1 / math.Pow(float64(i), theta)
		if i == 2 {
			zeta2 = zetan
		}
	}
	z := &zipf{rng: rng, n: float64(n), theta: theta, alpha: 1 / (1 - theta), zetan: zetan}
	z.eta = (1 - math.Pow(2/z.n, 1-theta)) / (1 - zeta2/zetan)
	z.half = 1 + math.Pow(0.5, theta)
	return z
}

func (z *zipf) next() int {
	u := z.rng.Float64()
	uz := u * z.zetan
	switch {
	case uz < 1:
		return 0
	case uz < z.half:
		return 1
	}
	return int(z.n * math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// lruSim is an exact byte-bounded LRU, the baseline for the hit ratio.
type lruSim struct {
	budget, bytes int64
	ll            *clist.List
	m             map[int]*clist.Element
	cost          func(k int) int64
}

func (l *lruSim) get(k int) bool {
	if e, ok := l.m[k]; ok {
		l.ll.MoveToFront(e)
		return true
	}
	return false
}

func (l *lruSim) set(k int) {
	for l.bytes+l.cost(k) > l.budget {
		e := l.ll.Back()
		old := e.Value.(int)
		delete(l.m, old)
		l.ll.Remove(e)
		l.bytes -= l.cost(old)
	}
	l.m[k] = l.ll.PushFront(k)
	l.bytes += l.cost(k)
}

// TestHitRatioZipf runs a look-aside stream (get; on a miss, set) drawn from Zipf(0.99) over
// 100k keys against a cache holding ~10% of them by bytes, and compares with an exact LRU of
// the same byte budget, for fixed and for varying value sizes. It logs the ratios and asserts
// only a sane floor.
func TestHitRatioZipf(t *testing.T) {
	const keys = 100_000
	requests, shardCounts := 500_000, []int{0, 4}
	if raceEnabled || testing.Short() {
		requests, shardCounts = 100_000, []int{0}
	}
	stream := make([]int, requests)
	z := newZipf(rand.New(rand.NewPCG(3, 4)), keys, 0.99)
	for i := range stream {
		stream[i] = z.next()
	}
	keyOf := func(i int) []byte { return fmt.Appendf(nil, "key:%06d", i) }
	sizes := []struct {
		name string
		size func(k int) int
	}{
		{"fixed 100", func(int) int { return 100 }},
		{"varying 20-420", func(k int) int { return 20 + (k*7919)%400 }},
	}
	for _, sz := range sizes {
		cost := func(k int) int64 { return int64(len(keyOf(k)) + sz.size(k) + ItemOverhead) }
		var total int64
		for k := range keys {
			total += cost(k)
		}
		budget := total / 10
		warm := requests / 10

		lru := &lruSim{budget: budget, ll: clist.New(), m: map[int]*clist.Element{}, cost: cost}
		lruHits := 0
		for i, k := range stream {
			if lru.get(k) {
				if i >= warm {
					lruHits++
				}
			} else {
				lru.set(k)
			}
		}
		lruRatio := float64(lruHits) / float64(requests-warm)

		val := make([]byte, 1024)
		for _, shards := range shardCounts {
			c, _ := newTestCache(t, Config{MaxBytes: budget, MaxItemSize: 1024, Shards: shards})
			hits := 0
			for i, k := range stream {
				key := keyOf(k)
				if _, ok := c.Get(nil, key, GetOptions{}, valueAppender{}); ok {
					if i >= warm {
						hits++
					}
				} else {
					c.Store(Set, key, val[:sz.size(k)], 0, 0, 0)
				}
			}
			ratio := float64(hits) / float64(requests-warm)
			st := c.Stats()
			t.Logf("%s, %d shards: tinylfu hit ratio %.3f, exact LRU %.3f; items %d (LRU %d), bytes %d/%d, evictions %d (by bytes %d), rebuilds %d",
				sz.name, st.Shards, ratio, lruRatio, st.CurrItems, lru.ll.Len(), st.Bytes, budget, st.Evictions, st.ByteEvictions, st.Rebuilds)
			if ratio < lruRatio/2 {
				t.Errorf("hit ratio %.3f below half of LRU's %.3f", ratio, lruRatio)
			}
			checkInvariants(t, c)
		}
	}
}
