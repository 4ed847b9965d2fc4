package cache

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"sync"
	"testing"
)

// checkAppender verifies, under the shard lock, that a hit is one of the values written for
// its key: "<key>|<digits>" optionally followed by appended "+" bytes, with the key's flags.
type checkAppender struct{ t *testing.T }

func (a checkAppender) AppendItem(dst []byte, it Item) []byte {
	prefix := append(bytes.Clone(it.Key), '|')
	if !bytes.HasPrefix(it.Value, prefix) || it.Flags != uint64(crc32.ChecksumIEEE(it.Key)) {
		a.t.Errorf("torn or foreign value %q flags %d for key %q", it.Value, it.Flags, it.Key)
	}
	return append(dst, it.Value...)
}

// TestConcurrentOps runs a bounded number of goroutines doing random operations on shared keys
// with a budget small enough to force evictions and rebuilds, then checks every invariant.
func TestConcurrentOps(t *testing.T) {
	workers, ops := 8, 4000
	if raceEnabled {
		ops = 1500
	}
	const maxBytes = 48 << 10
	c, clk := newTestCache(t, Config{MaxBytes: maxBytes, MaxItemSize: 2048, Shards: 8})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			app := checkAppender{t}
			dst := make([]byte, 0, 4096)
			for i := range ops {
				key := fmt.Appendf(nil, "key-%d", rng.IntN(300))
				flags := uint64(crc32.ChecksumIEEE(key))
				val := fmt.Appendf(append(bytes.Clone(key), '|'), "%0*d", rng.IntN(900), i)
				switch r := rng.IntN(100); {
				case r < 40:
					dst, _ = c.Get(dst[:0], key, GetOptions{Touch: r < 5, Exptime: 100}, app)
				case r < 70:
					if out, _ := c.Store(Set, key, val, flags, int64(rng.IntN(4)), 0); out != Stored {
						t.Errorf("set: %v", out)
					}
				case r < 75:
					c.Store(Add, key, val, flags, 0, 0)
				case r < 80:
					c.Store(Append, key, []byte("++"), 0, 0, 0)
				case r < 85:
					c.Delete(key)
				case r < 88:
					c.Touch(key, 50)
				case r < 91:
					c.Arith(key, true, 1)
				case r < 93:
					var a capture
					if _, ok := c.Get(nil, key, GetOptions{}, &a); ok {
						c.Store(CAS, key, val, flags, 0, a.it.CAS)
					}
				case r < 96:
					if st := c.Stats(); st.Bytes > maxBytes {
						t.Errorf("bytes %d over %d", st.Bytes, maxBytes)
					}
				case r < 97:
					clk.Advance(1)
				case r < 98 && i%500 == 0:
					c.FlushAll(int64(rng.IntN(3)))
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, c)
	st := c.Stats()
	t.Logf("items %d bytes %d evictions %d reclaimed %d rebuilds %d hits %d misses %d",
		st.CurrItems, st.Bytes, st.Evictions, st.Reclaimed, st.Rebuilds, st.GetHits, st.GetMisses)
}
