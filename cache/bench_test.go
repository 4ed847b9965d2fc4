package cache

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

const benchKeys = 1 << 16

func benchKeyset() [][]byte {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "bench:key:%08d", i)
	}
	return keys
}

// newBenchCache returns a 256 MB cache holding benchKeys items of 100 bytes. Its clock is an
// atomic load (a fake one: the benchmarks need no moving time), as the server's coarse clock is.
func newBenchCache(b *testing.B) (*Cache, [][]byte, []byte) {
	return newBenchCacheClock(b, newFakeClock())
}

func newBenchCacheClock(b *testing.B, clk Clock) (*Cache, [][]byte, []byte) {
	c, err := New(Config{MaxBytes: 256 << 20, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	keys, val := benchKeyset(), make([]byte, 100)
	for _, k := range keys {
		c.Store(Set, k, val, 0, 0, 0)
	}
	return c, keys, val
}

func BenchmarkGetHit(b *testing.B) {
	benchGetHit(b, newFakeClock())
}

// BenchmarkGetHitSystemClock shows the cost of reading the system clock on every operation.
func BenchmarkGetHitSystemClock(b *testing.B) {
	benchGetHit(b, SystemClock())
}

func benchGetHit(b *testing.B, clk Clock) {
	c, keys, _ := newBenchCacheClock(b, clk)
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var ok bool
		dst, ok = c.Get(dst[:0], keys[i&(benchKeys-1)], GetOptions{}, valueAppender{})
		if !ok {
			b.Fatal("miss")
		}
	}
}

func BenchmarkGetMiss(b *testing.B) {
	c, _, _ := newBenchCache(b)
	key := []byte("bench:missing:key")
	b.ReportAllocs()
	for b.Loop() {
		c.Get(nil, key, GetOptions{}, valueAppender{})
	}
}

func BenchmarkStoreExisting(b *testing.B) {
	c, keys, val := newBenchCache(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if out, _ := c.Store(Set, keys[i&(benchKeys-1)], val, 0, 0, 0); out != Stored {
			b.Fatal(out)
		}
	}
}

// BenchmarkStoreNew stores fresh keys into a full 8 MB cache: admission and eviction work.
func BenchmarkStoreNew(b *testing.B) {
	c, err := New(Config{MaxBytes: 8 << 20, Clock: newFakeClock()})
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 100)
	key := make([]byte, 0, 32)
	for i := range 200_000 {
		c.Store(Set, fmt.Appendf(key[:0], "warm:%d", i), val, 0, 0, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key = fmt.Appendf(key[:0], "new:%d", i)
		c.Store(Set, key, val, 0, 0, 0)
	}
}

// BenchmarkStoreNewVariableSizes stores new keys with values of 10 to 4,000 bytes into a full
// 64 MiB cache: every store makes room among ~90 size classes per shard (docs/benchmarks-appendix.md,
// 12b).
func BenchmarkStoreNewVariableSizes(b *testing.B) {
	c, err := New(Config{MaxBytes: 64 << 20, Clock: newFakeClock()})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 4000)
	key := make([]byte, 0, 32)
	for i := range 100_000 {
		c.Store(Set, fmt.Appendf(key[:0], "warm:%d", i), val[:10+rng.IntN(3991)], 0, 0, 0)
	}
	sizes := make([]int, 1<<16)
	for i := range sizes {
		sizes[i] = 10 + rng.IntN(3991)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		key = fmt.Appendf(key[:0], "new:%d", i)
		c.Store(Set, key, val[:sizes[i&(len(sizes)-1)]], 0, 0, 0)
	}
}

// BenchmarkParallelMix: 90% gets, 10% sets over Zipf-distributed keys, look-aside style.
func BenchmarkParallelMix(b *testing.B) {
	c, keys, val := newBenchCache(b)
	b.ReportAllocs()
	b.ResetTimer()
	var seed uint64
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		seed++
		rng := rand.New(rand.NewPCG(seed, 1))
		mu.Unlock()
		z := rand.NewZipf(rng, 1.01, 1, benchKeys-1)
		dst := make([]byte, 0, 1024)
		for pb.Next() {
			k := keys[z.Uint64()]
			if rng.IntN(10) == 0 {
				c.Store(Set, k, val, 0, 0, 0)
				continue
			}
			var ok bool
			if dst, ok = c.Get(dst[:0], k, GetOptions{}, valueAppender{}); !ok {
				c.Store(Set, k, val, 0, 0, 0)
			}
		}
	})
}

// mapCache is the baseline: one map and one mutex, no budget, no policy.
type mapCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMapCache(keys [][]byte, val []byte) *mapCache {
	mc := &mapCache{m: make(map[string][]byte, len(keys))}
	for _, k := range keys {
		mc.set(k, val)
	}
	return mc
}

func (mc *mapCache) get(dst, key []byte) ([]byte, bool) {
	mc.mu.Lock()
	v, ok := mc.m[string(key)]
	if ok {
		dst = append(dst, v...)
	}
	mc.mu.Unlock()
	return dst, ok
}

func (mc *mapCache) set(key, val []byte) {
	mc.mu.Lock()
	if old, ok := mc.m[string(key)]; ok && cap(old) >= len(val) {
		mc.m[string(key)] = append(old[:0], val...)
	} else {
		mc.m[string(key)] = append([]byte(nil), val...)
	}
	mc.mu.Unlock()
}

func BenchmarkBaselineMapGetHit(b *testing.B) {
	keys, val := benchKeyset(), make([]byte, 100)
	mc := newMapCache(keys, val)
	dst := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		dst, _ = mc.get(dst[:0], keys[i&(benchKeys-1)])
	}
}

func BenchmarkBaselineMapStoreExisting(b *testing.B) {
	keys, val := benchKeyset(), make([]byte, 100)
	mc := newMapCache(keys, val)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		mc.set(keys[i&(benchKeys-1)], val)
	}
}

func BenchmarkBaselineMapParallelMix(b *testing.B) {
	keys, val := benchKeyset(), make([]byte, 100)
	mc := newMapCache(keys, val)
	b.ReportAllocs()
	b.ResetTimer()
	var seed uint64
	var mu sync.Mutex
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		seed++
		rng := rand.New(rand.NewPCG(seed, 1))
		mu.Unlock()
		z := rand.NewZipf(rng, 1.01, 1, benchKeys-1)
		dst := make([]byte, 0, 1024)
		for pb.Next() {
			k := keys[z.Uint64()]
			if rng.IntN(10) == 0 {
				mc.set(k, val)
				continue
			}
			dst, _ = mc.get(dst[:0], k)
		}
	})
}
