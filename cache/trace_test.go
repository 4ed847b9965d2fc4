package cache

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestTraceReplay replays a cache trace in process, look-aside (a get of each key, a set of each
// miss), and logs the hit ratio and item count: a quick check of the policy while it is tuned.
// The harness's trace scenario (benchmarks/) measures the server itself. Set
// TANDEM_TRACE=path (an ARC trace, decompressed: `start count ignored reqno`, each 512-byte block
// one key; Megiddo and Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003)
// or TANDEM_TRACE=zipf:THETA:KEYS:REQUESTS, with TANDEM_TRACE_VALUE (bytes) and
// TANDEM_TRACE_MB (-m); TANDEM_TRACE_VALUE_MIN varies the value size per key from that to
// TANDEM_TRACE_VALUE bytes.
func TestTraceReplay(t *testing.T) {
	spec := os.Getenv("TANDEM_TRACE")
	if spec == "" {
		t.Skip("set TANDEM_TRACE to replay a trace")
	}
	value, _ := strconv.Atoi(os.Getenv("TANDEM_TRACE_VALUE"))
	mb, _ := strconv.Atoi(os.Getenv("TANDEM_TRACE_MB"))
	window, _ := strconv.Atoi(os.Getenv("TANDEM_TRACE_WINDOW"))
	var keys []uint64
	if rest, ok := strings.CutPrefix(spec, "zipf:"); ok {
		var theta float64
		var n, reqs int
		fmt.Sscanf(strings.ReplaceAll(rest, ":", " "), "%g %d %d", &theta, &n, &reqs)
		z := newZipf(rand.New(rand.NewPCG(1, 2)), n, theta)
		for range reqs {
			keys = append(keys, uint64(z.next()))
		}
	} else {
		f, err := os.Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var start, count uint64
			if _, err := fmt.Sscan(sc.Text(), &start, &count); err == nil {
				for b := range count {
					keys = append(keys, start+b)
				}
			}
		}
	}
	c, _ := newTestCache(t, Config{MaxBytes: int64(mb) << 20, WindowPercent: window})
	val := make([]byte, value)
	vmin, _ := strconv.Atoi(os.Getenv("TANDEM_TRACE_VALUE_MIN"))
	hits, counted := 0, 0
	warm, _ := strconv.Atoi(os.Getenv("TANDEM_TRACE_WARM")) // requests not counted
	var key []byte
	check := os.Getenv("TANDEM_TRACE_CHECK") != ""
	for i, k := range keys {
		if check && i%5000 == 0 {
			checkInvariants(t, c)
			if t.Failed() {
				t.Fatalf("at request %d", i)
			}
		}
		key = strconv.AppendUint(key[:0], k, 10)
		if i >= warm {
			counted++
		}
		if _, ok := c.Get(nil, key, GetOptions{}, discard{}); ok {
			if i >= warm {
				hits++
			}
		} else {
			v := val
			if vmin > 0 {
				v = val[:vmin+int((k*0x9E3779B97F4A7C15)>>33)%(value-vmin+1)]
			}
			c.Store(Set, key, v, 0, 0, 0)
		}
	}
	freeBy := map[int]int{}
	var pages, recs, idx, ring, mainB, wbytes, capac, free, uncarved int64
	for i := range c.shards {
		s := &c.shards[i]
		pages += s.pageBytes
		recs += s.recBytes
		idx += s.idx.bytes()
		ring += s.win.bytes()
		mainB += s.mainBytes
		wbytes += s.wbytes
		capac += int64(s.capacity)
		for cl := range s.slab {
			for f := s.slab[cl].free; f != 0; f = le.Uint32(s.chunk(f - 1)) {
				free += int64(slabSizes[cl])
				freeBy[slabSizes[cl]]++
			}
		}
		for _, p := range s.pages {
			if p.mem != nil && p.class != large {
				uncarved += int64(len(p.mem) - p.carved*p.size)
			}
		}
	}
	t.Logf("free chunks %d uncarved %d %v", free, uncarved, freeBy)
	liveBy := map[int]int{}
	for i := range c.shards {
		for _, r := range c.shards[i].records {
			liveBy[cap(r)]++
		}
	}
	t.Logf("live by chunk %v", liveBy)
	t.Logf("pages %d records %d (window %d) index %d queue %d main %d (capacity %d)", pages, recs, wbytes, idx, ring, mainB, capac)
	st := c.Stats()
	t.Logf("%s value %d -m %d window %d: hit ratio %.4f over %d requests; items %d (window %d), used %d, evictions %d, by pages %d, rebuilds %d",
		spec, value, mb, window, float64(hits)/float64(counted), counted, st.CurrItems, st.WindowItems, st.Used, st.Evictions, st.ByteEvictions, st.Rebuilds)
}
