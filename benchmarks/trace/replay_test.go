package trace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/mctest"
	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// fakeServer is an unbounded in-memory cache speaking the get (multi-key)
// and set commands of the text protocol on 127.0.0.1. Sets of a key
// for which refuse says true are answered "SERVER_ERROR out of memory
// storing object" and not stored.
type fakeServer struct {
	ln     net.Listener
	refuse func(key string) bool
	mu     sync.Mutex
	data   map[string][]byte // guarded by mu
	wg     sync.WaitGroup
}

func startFake(t *testing.T, refuse func(string) bool) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, refuse: refuse, data: map[string][]byte{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) serve(c net.Conn) {
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "get":
			s.mu.Lock()
			for _, k := range f[1:] {
				if v, ok := s.data[k]; ok {
					fmt.Fprintf(w, "VALUE %s 0 %d\r\n%s\r\n", k, len(v), v)
				}
			}
			s.mu.Unlock()
			w.WriteString("END\r\n")
		case len(f) == 5 && f[0] == "set":
			n, _ := strconv.Atoi(f[4])
			v := make([]byte, n+2)
			if _, err := io.ReadFull(r, v); err != nil {
				return
			}
			if s.refuse != nil && s.refuse(f[1]) {
				w.WriteString("SERVER_ERROR out of memory storing object\r\n")
				break
			}
			s.mu.Lock()
			s.data[f[1]] = v[:n]
			s.mu.Unlock()
			w.WriteString("STORED\r\n")
		default:
			w.WriteString("ERROR\r\n")
		}
		if r.Buffered() == 0 {
			if w.Flush() != nil {
				return
			}
		}
	}
}

// sliceStream replays a fixed key list.
type sliceStream struct{ keys []uint64 }

func (s *sliceStream) Next() (uint64, error) {
	if len(s.keys) == 0 {
		return 0, io.EOF
	}
	k := s.keys[0]
	s.keys = s.keys[1:]
	return k, nil
}

func (s *sliceStream) Close() error { return nil }

// model computes what Replay must count against an unbounded cache: a key
// hits when a batch before its own stored it; each batch stores its
// distinct misses unless refused.
func model(keys []uint64, batch int, warmup, window int64, refused func(uint64) bool) Result {
	var r Result
	stored := map[uint64]bool{}
	for i := 0; i < len(keys); i += batch {
		end := min(i+batch, len(keys))
		var miss []uint64
		r.Batches++
		for j := i; j < end; j++ {
			k := keys[j]
			hit := stored[k]
			r.Accesses++
			if int64(j) >= warmup {
				r.MeasuredAccesses++
			}
			if window > 0 {
				w := int(int64(j) / window)
				for len(r.Windows) <= w {
					r.Windows = append(r.Windows, Window{})
				}
				r.Windows[w].Accesses++
				if hit {
					r.Windows[w].Hits++
				}
			}
			if hit {
				r.Hits++
				if int64(j) >= warmup {
					r.MeasuredHits++
				}
			} else if contains(miss, k) {
				r.RepeatMisses++
			} else {
				miss = append(miss, k)
			}
		}
		for _, k := range miss {
			r.Sets++
			if refused(k) {
				r.SetsRefused++
			} else {
				stored[k] = true
			}
		}
	}
	return r
}

func contains(s []uint64, k uint64) bool {
	for _, v := range s {
		if v == k {
			return true
		}
	}
	return false
}

func TestReplayCountsAgainstAModel(t *testing.T) {
	keys := drain(t, Spec{Theta: 0.9, Keys: 500, Requests: 3_000, Seed: 5})
	keys = append(keys, 7, 7, 7, 8) // duplicates inside the last batch
	tests := []struct {
		name   string
		batch  int
		warmup int64
		window int64
		prefix string
		minVal int // sizes from this to 300 bytes per key (0: all 300)
		refuse func(uint64) bool
	}{
		{name: "batch 100", batch: 100, warmup: 750},
		{name: "batch 100, windows of 250", batch: 100, window: 250},
		{name: "batch 7, windows of 1,000", batch: 7, window: 1000},
		{name: "batch 1", batch: 1},
		{name: "batch 7, prefix", batch: 7, warmup: 10, prefix: "arc:"},
		{name: "refused sets", batch: 100, refuse: func(k uint64) bool { return k%5 == 0 }},
		{name: "sizes 1-300 per key", batch: 100, warmup: 750, minVal: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			refuse := tc.refuse
			if refuse == nil {
				refuse = func(uint64) bool { return false }
			}
			srv := startFake(t, func(key string) bool {
				k, _ := strconv.ParseUint(strings.TrimPrefix(key, tc.prefix), 10, 64)
				return refuse(k)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := Config{Addr: srv.ln.Addr().String(), Batch: tc.batch, ValueSize: 300, Warmup: tc.warmup,
				KeyPrefix: tc.prefix, Timeout: 10 * time.Second, Window: tc.window, MinValueSize: tc.minVal}
			got, err := Replay(ctx, cfg, &sliceStream{keys: keys})
			if err != nil {
				t.Fatal(err)
			}
			want := model(keys, tc.batch, tc.warmup, tc.window, refuse)
			if got.ErrorReplies != 0 {
				t.Errorf("%d error replies, first %q", got.ErrorReplies, got.FirstError)
			}
			got.Elapsed, got.FirstError = 0, ""
			for i, w := range got.Windows {
				if w.End <= 0 || (i > 0 && w.End < got.Windows[i-1].End) {
					t.Errorf("window %d ends at %v, after %v", i, w.End, got.Windows[max(i-1, 0)].End)
				}
				got.Windows[i].End = 0
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("counted %+v\nwant    %+v", got, want)
			}
			if got.Hits == 0 || got.Hits == got.Accesses {
				t.Errorf("degenerate trace: %d hits of %d", got.Hits, got.Accesses)
			}
		})
	}
}

// TestReplayDetectsWrongValues: a value of another size or other bytes is
// an error reply, not a hit lost or a desync.
func TestReplayDetectsWrongValues(t *testing.T) {
	srv := startFake(t, nil)
	c, err := loadgen.Dial(srv.ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Set([]byte("1"), []byte("short")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set([]byte("2"), []byte(strings.Repeat("z", 10))); err != nil {
		t.Fatal(err)
	}
	got, err := Replay(context.Background(), Config{Addr: srv.ln.Addr().String(), ValueSize: 10},
		&sliceStream{keys: []uint64{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Hits != 2 || got.ErrorReplies != 2 || got.Sets != 1 {
		t.Errorf("got %+v, want 2 hits, 2 error replies, 1 set", got)
	}
}

func TestReplayStopsOnContext(t *testing.T) {
	srv := startFake(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Replay(ctx, Config{Addr: srv.ln.Addr().String()}, &sliceStream{keys: []uint64{1, 2}})
	if err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestReplayAgainstMemcached: the real memcached's own counters agree with
// what the replay counted (get_hits, get_misses, cmd_set).
func TestReplayAgainstMemcached(t *testing.T) {
	addr := mctest.Memcached(t)
	keys := drain(t, Spec{Theta: 0.99, Keys: 2_000, Requests: 20_000, Seed: 9})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := Replay(ctx, Config{Addr: addr, Batch: 100, ValueSize: 1000, Warmup: 5_000}, &sliceStream{keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if got.ErrorReplies != 0 || got.SetsRefused != 0 {
		t.Fatalf("got %+v", got)
	}
	// -m 64 holds every key: the model of an unbounded cache is exact.
	want := model(keys, 100, 5_000, 0, func(uint64) bool { return false })
	got.Elapsed = 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("counted %+v\nwant    %+v", got, want)
	}
	c, err := loadgen.Dial(addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]int64{"get_hits": got.Hits, "get_misses": got.Accesses - got.Hits, "cmd_set": got.Sets} {
		if st[name] != strconv.FormatInt(v, 10) {
			t.Errorf("memcached %s = %s, replay counted %d", name, st[name], v)
		}
	}
}

func BenchmarkReplayBatch(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	s := &fakeServer{ln: ln, data: map[string][]byte{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	keys := make([]uint64, b.N*100)
	for i := range keys {
		keys[i] = uint64(i % 1000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := Replay(context.Background(), Config{Addr: ln.Addr().String()}, &sliceStream{keys: keys}); err != nil {
		b.Fatal(err)
	}
}

// TestValueSizesPerKey: with MinValueSize each key keeps one size, and the sizes spread over
// the whole range.
func TestValueSizesPerKey(t *testing.T) {
	c := newClient(nil, Config{ValueSize: 4500, MinValueSize: 10})
	seen := map[int]bool{}
	var sum int
	for k := range uint64(10_000) {
		n := len(c.valueOf(k))
		if n < 10 || n > 4500 || n != len(c.valueOf(k)) {
			t.Fatalf("key %d: %d bytes, then %d (want 10 to 4500, the same each time)", k, n, len(c.valueOf(k)))
		}
		seen[n/500] = true
		sum += n
	}
	if mean := sum / 10_000; len(seen) != 10 || mean < 2100 || mean > 2400 {
		t.Errorf("sizes fall in %d of 10 buckets of 500 B, mean %d: want all, near 2,255", len(seen), mean)
	}
	if n := len(newClient(nil, Config{ValueSize: 300}).valueOf(7)); n != 300 {
		t.Errorf("fixed size: %d bytes, want 300", n)
	}
}
