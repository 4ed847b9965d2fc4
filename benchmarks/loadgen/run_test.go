package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/mctest"
)

func testConfig(addr string) Config {
	c := DefaultConfig()
	c.Addr = addr
	c.Requests = 2000
	c.Keys = 200
	c.HardCap = 20 * time.Second
	return c
}

func TestRunMixedAgainstFake(t *testing.T) {
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Conns, cfg.Depth, cfg.SetRatio, cfg.GetRatio = 3, 4, 1, 1
	cfg.ValueSizes = []int{1, 100, 3000}
	var progress bytes.Buffer
	cfg.Progress, cfg.ProgressEvery = &progress, time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != cfg.Requests || res.Gets+res.Sets != res.Requests {
		t.Errorf("requests = %d (gets %d + sets %d), want %d", res.Requests, res.Gets, res.Sets, cfg.Requests)
	}
	if res.Errors.Total() != 0 {
		t.Errorf("errors: %+v", res.Errors)
	}
	if res.Hits == 0 || res.Hits+res.Misses != res.Gets {
		t.Errorf("hits %d + misses %d != gets %d (or no hits)", res.Hits, res.Misses, res.Gets)
	}
	if res.Latency["get"].Count != res.Gets || res.Latency["set"].Count != res.Sets {
		t.Errorf("latency counts %+v, want gets %d sets %d", res.Latency, res.Gets, res.Sets)
	}
	// Not a terminal: whole lines, no carriage returns.
	if p := progress.String(); !strings.Contains(p, "req/s") || strings.Contains(p, "\r") || !strings.HasSuffix(p, "\n") {
		t.Errorf("progress into a buffer: %q", p)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil || !strings.Contains(table.String(), "p99.9 us") {
		t.Errorf("table: %v\n%s", err, table.String())
	}
}

func TestRunSequentialSetsThenGetsAllHit(t *testing.T) {
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Conns, cfg.Dist, cfg.Keys, cfg.Requests = 7, Sequential, 1001, 1001
	cfg.SetRatio, cfg.GetRatio = 1, 0
	if res, err := Run(context.Background(), cfg); err != nil || res.Sets != 1001 {
		t.Fatalf("set phase: %v, %+v", err, res)
	}
	cfg.SetRatio, cfg.GetRatio = 0, 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Hits != 1001 || res.HitRatio != 1 || res.Errors.Total() != 0 {
		t.Errorf("get phase: hits %d ratio %v errors %+v, want 1001 hits", res.Hits, res.HitRatio, res.Errors)
	}
}

func TestRunLookAside(t *testing.T) {
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Workload, cfg.Dist, cfg.Keys, cfg.Depth = LookAside, Zipfian, 500, 8
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Gets != cfg.Requests {
		t.Errorf("gets = %d, want %d (Requests counts gets)", res.Gets, cfg.Requests)
	}
	if res.Sets != res.Misses {
		t.Errorf("sets %d != misses %d", res.Sets, res.Misses)
	}
	// The fake never evicts: every key misses at most once per connection
	// race, so misses are bounded by keys x conns.
	if res.Misses > int64(cfg.Keys)*int64(cfg.Conns) || res.HitRatio <= 0.5 {
		t.Errorf("misses %d, hit ratio %v", res.Misses, res.HitRatio)
	}
}

func TestRunDetectsCorruption(t *testing.T) {
	f := startFake(t, true, false)
	cfg := testConfig(f.addr())
	cfg.SetRatio, cfg.GetRatio = 1, 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Verify == 0 || res.Errors.Verify != res.Hits {
		t.Errorf("verify errors %d, hits %d: every hit should fail", res.Errors.Verify, res.Hits)
	}
	if !strings.Contains(res.Errors.First, "differ") {
		t.Errorf("first error %q", res.Errors.First)
	}
}

func TestRunDurationBound(t *testing.T) {
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Requests, cfg.Duration = 0, 150*time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second || res.Requests == 0 || res.HitHardCap {
		t.Errorf("took %v, requests %d, hard cap %v", took, res.Requests, res.HitHardCap)
	}
}

func TestRunHardCapOnSilentServer(t *testing.T) {
	f := startFake(t, false, true)
	cfg := testConfig(f.addr())
	cfg.HardCap = 200 * time.Millisecond
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.HitHardCap || time.Since(start) > 5*time.Second {
		t.Errorf("hard cap %v after %v", res.HitHardCap, time.Since(start))
	}
	if res.Errors.IO != 0 {
		t.Errorf("connections closed by the hard cap counted as errors: %+v", res.Errors)
	}
}

func TestRunContextCancel(t *testing.T) {
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Requests, cfg.Duration = 0, time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Run(ctx, cfg); err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}

func TestRunDialFailure(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", mctest.FreePort(t)) // nothing listens there
	if _, err := Run(context.Background(), testConfig(addr)); err == nil {
		t.Error("Run against a closed port: want an error")
	}
	bad := testConfig(addr)
	bad.Conns = 0
	if _, err := Run(context.Background(), bad); err == nil {
		t.Error("invalid config: want an error")
	}
}

func TestRunServerDropsConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // every connection dies at once
		}
	}()
	cfg := testConfig(ln.Addr().String())
	cfg.Conns = 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.IO == 0 || res.ConnsLost != 2 {
		t.Errorf("io errors %d, conns lost %d; want > 0 and 2", res.Errors.IO, res.ConnsLost)
	}
}

func TestRunAgainstMemcached(t *testing.T) {
	addr := mctest.Memcached(t)
	c, err := Dial(addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Version(); err != nil || v == "" {
		t.Fatalf("version %q %v", v, err)
	}
	st, err := c.Stats()
	if err != nil || st["pid"] == "" {
		t.Fatalf("stats %v %v", st, err)
	}
	cfg := testConfig(addr)
	cfg.Conns, cfg.Depth, cfg.SetRatio, cfg.GetRatio = 4, 8, 1, 3
	cfg.ValueSizes = []int{2, 81, 6561, 59049}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Total() != 0 || res.Hits == 0 || res.Requests != cfg.Requests {
		t.Errorf("errors %+v, hits %d, requests %d", res.Errors, res.Hits, res.Requests)
	}
	// A value over memcached's 1 MB item limit is a counted SERVER_ERROR,
	// and the connection stays usable.
	big := testConfig(addr)
	big.Requests, big.SetRatio, big.GetRatio, big.ValueSizes, big.KeyPrefix = 20, 1, 0, []int{2 << 20}, "big:"
	res, err = Run(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Server != 20 || res.Errors.IO != 0 {
		t.Errorf("oversized sets: %+v, want 20 server errors", res.Errors)
	}
}

func TestKeySeedChangesKeysNotValues(t *testing.T) {
	stream := func(seed, keySeed uint64) []uint64 {
		cfg := testConfig("127.0.0.1:1")
		cfg.Keys, cfg.Seed, cfg.KeySeed = 1<<40, seed, keySeed
		st := &run{cfg: &cfg, rec: NewRecorder()}
		w := st.newWorker(0, nil)
		out := make([]uint64, 8)
		for i := range out {
			out[i] = w.keys.Next()
		}
		return out
	}
	base := stream(1, 0)
	if got := stream(1, 2); slices.Equal(got, base) {
		t.Errorf("KeySeed 2 drew the same keys as Seed 1: %v", got)
	}
	if got, want := stream(1, 2), stream(2, 0); !slices.Equal(got, want) {
		t.Errorf("KeySeed 2 keys %v, want Seed 2's %v", got, want)
	}

	// A second look-aside run with fresh keys over the first run's data
	// still verifies every value it reads.
	f := startFake(t, false, false)
	cfg := testConfig(f.addr())
	cfg.Workload, cfg.Dist, cfg.Keys, cfg.Depth = LookAside, Zipfian, 500, 8
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.KeySeed = 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors.Total() != 0 || res.Hits == 0 {
		t.Errorf("second run: %d hits, errors %+v", res.Hits, res.Errors)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
}
