package cache

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// memFilePath returns a memory file path on tmpfs where there is one (as in production), else
// in the test's temporary directory.
func memFilePath(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "tandem-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			dir = d
		}
	}
	return filepath.Join(dir, "memory_file")
}

// restartFixture is a mix of items a restart must keep: sizes from tiny to the item size
// limit (small chunks, the largest chunk, large records), flags, TTLs, cas ids, appends,
// a meta-protocol state bit, and deleted and expired items it must not bring back.
type restartFixture struct {
	keep    map[string]Item // key -> what a Get must return after the restart
	gone    []string        // deleted or expired: a miss after the restart
	maxItem int
}

func fillForRestart(t *testing.T, c *Cache, clk *fakeClock, maxItem int) restartFixture {
	t.Helper()
	fx := restartFixture{keep: map[string]Item{}, maxItem: maxItem}
	sizes := []int{0, 1, 7, 100, 1000, 3000, 5000, 20_000, 100_000, maxItem - ItemOverhead - 20}
	for i := range 600 {
		key := fmt.Sprintf("key:%d", i)
		val := bytes.Repeat([]byte{byte('a' + i%26)}, sizes[i%len(sizes)])
		exp := int64(0)
		switch i % 5 {
		case 1:
			exp = 3600 // relative: still live after the restart
		case 2:
			exp = 5 // expires before the restart
		}
		flags := uint64(i * 7)
		if c.shards[0].cfg.tail != 0 {
			flags |= uint64(i) << 40 // above 32 bits with --large-client-flags
		}
		out, _ := c.Store(Set, []byte(key), val, flags, exp, 0)
		if out != Stored {
			t.Fatalf("set %s (%d bytes): %v", key, len(val), out)
		}
	}
	for i := range 600 {
		key := fmt.Sprintf("key:%d", i)
		switch {
		case i%5 == 2:
			fx.gone = append(fx.gone, key)
			continue
		case i%7 == 3:
			if c.Delete([]byte(key)) != Deleted {
				t.Fatalf("delete %s", key)
			}
			fx.gone = append(fx.gone, key)
			continue
		case i%11 == 4:
			if out, _ := c.Store(Append, []byte(key), []byte("+tail"), 0, 0, 0); out != Stored {
				t.Fatalf("append %s: %v", key, out)
			}
		case i%13 == 5 && !c.disableCAS:
			it, _ := get(c, key)
			if out, _ := c.Store(CAS, []byte(key), []byte("cas-value"), 99, 0, it.CAS); out != Stored {
				t.Fatalf("cas %s: %v", key, out)
			}
		case i%17 == 6:
			if c.MetaDelete([]byte(key), MetaDeleteOptions{Invalidate: true}) != Deleted {
				t.Fatalf("md I %s", key)
			}
		}
		var a capture
		if _, ok := c.Peek(nil, []byte(key), &a); !ok {
			t.Fatalf("peek %s: miss", key)
		}
		fx.keep[key] = a.it
	}
	if ev := c.Stats().Evictions; ev != 0 {
		t.Fatalf("%d evictions: the fixture must fit", ev)
	}
	clk.Advance(10) // the 5-second items expire
	return fx
}

// check verifies, without touching them first, that every kept item is byte-identical with
// the same cas id, flags, exptime and state, and that the gone ones miss.
func (fx restartFixture) check(t *testing.T, c *Cache) {
	t.Helper()
	for key, want := range fx.keep {
		var a capture
		if _, ok := c.Peek(nil, []byte(key), &a); !ok {
			t.Fatalf("%s: miss after the restart", key)
		}
		got := a.it
		if !bytes.Equal(got.Value, want.Value) || got.CAS != want.CAS || got.Flags != want.Flags ||
			got.Exptime != want.Exptime || got.Stale != want.Stale || got.Fetched != want.Fetched {
			t.Fatalf("%s: after the restart %d bytes cas %d flags %d exp %d stale %v fetched %v, before %d bytes cas %d flags %d exp %d stale %v fetched %v",
				key, len(got.Value), got.CAS, got.Flags, got.Exptime, got.Stale, got.Fetched,
				len(want.Value), want.CAS, want.Flags, want.Exptime, want.Stale, want.Fetched)
		}
	}
	for _, key := range fx.gone {
		wantMiss(t, c, key)
	}
}

// restartConfig is the fixture's cache: fillForRestart stores about 39 MB, 60 values of 500 KB among
// them; at 64 MB over 4 shards a random hash seed put enough of those in one shard for an eviction
// now and then (TestRestartColdStarts missed a key twice in -race runs on a loaded machine), so it has twice that.
func restartConfig(path string, clk *fakeClock) Config {
	return Config{MaxBytes: 128 << 20, MaxItemSize: 512 << 10, Shards: 4, MemoryFile: path, Clock: clk}
}

func TestRestartRestoresItems(t *testing.T) {
	path := memFilePath(t)
	clk := newFakeClock()
	cfg := restartConfig(path, clk)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Restart(); r.Warm || !strings.Contains(r.Reason, "no metadata file") {
		t.Fatalf("first start: %+v, want cold for want of metadata", r)
	}
	fx := fillForRestart(t, c, clk, cfg.MaxItemSize)
	c.FlushAll(3600) // a pending flush survives too
	lastCAS := c.casID.Load()
	sv, err := c.SaveRestart()
	if err != nil {
		t.Fatal(err)
	}
	if sv.Lost != 0 || sv.Items != int(c.Stats().CurrItems) {
		t.Fatalf("saved %+v, %d items live", sv, c.Stats().CurrItems)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("a second cache on a file in use: %v, want refused", err)
	}
	closeMemFile(c.file) // the process exits

	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := c2.Restart()
	if !r.Warm || r.Items != len(fx.keep) {
		t.Fatalf("restart: %+v, want warm with %d items", r, len(fx.keep))
	}
	if st := c2.Stats(); r.Dropped == 0 || st.Reclaimed != uint64(r.Dropped) || st.Evictions != 0 {
		t.Fatalf("restart dropped %d expired items; stats reclaimed %d (want equal, > 0), evictions %d (want 0)", r.Dropped, st.Reclaimed, st.Evictions)
	}
	if _, err := os.Stat(path + ".meta"); !os.IsNotExist(err) {
		t.Fatalf("the metadata file is still there after a warm start: %v", err)
	}
	checkInvariants(t, c2)
	fx.check(t, c2)
	if got := c2.Stats().CurrItems; got != uint64(len(fx.keep)) {
		t.Fatalf("curr_items %d, want %d", got, len(fx.keep))
	}
	clk.Advance(3600) // the flush saved with the file takes effect
	wantMiss(t, c2, "key:0")
	if cas := set(t, c2, "new", "v"); cas <= lastCAS {
		t.Fatalf("cas after the restart %d, want above %d", cas, lastCAS)
	}
	wantValue(t, c2, "new", "v")
	checkInvariants(t, c2)

	// A second restart without a graceful stop (a crash) is cold: the metadata is gone.
	closeMemFile(c2.file)
	c3, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := c3.Restart(); r.Warm || c3.Stats().CurrItems != 0 {
		t.Fatalf("start after a crash: %+v, %d items", r, c3.Stats().CurrItems)
	}
}

// TestRestartColdStarts: whatever does not match starts cold, empty, saying why.
func TestRestartColdStarts(t *testing.T) {
	edit := func(path string, f func(meta string) string) {
		b, err := os.ReadFile(path + ".meta")
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(b), "\n")
		body = f(body)
		out := fmt.Sprintf("%s %08x\n%s", metaMagic, crc32.Checksum([]byte(body), castagnoli), body)
		if err := os.WriteFile(path+".meta", []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// pageAt is the file offset of the middle of a saved page; which shard and region a page is
	// in depends on the file's random hash seed, so the test looks it up.
	var pageAt int64
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string, cfg *Config)
		reason string
	}{
		{"memory limit changed", func(_ *testing.T, _ string, cfg *Config) { cfg.MaxBytes = 256 << 20 }, "-m (bytes) changed"},
		{"item size changed", func(_ *testing.T, _ string, cfg *Config) { cfg.MaxItemSize = 256 << 10 }, "-I (item size limit) changed"},
		{"cas disabled", func(_ *testing.T, _ string, cfg *Config) { cfg.DisableCAS = true }, "-C (cas disabled) changed"},
		{"metadata deleted", func(_ *testing.T, path string, _ *Config) { os.Remove(path + ".meta") }, "no metadata file"},
		{"metadata corrupt", func(t *testing.T, path string, _ *Config) {
			b, _ := os.ReadFile(path + ".meta")
			b[len(b)/2] ^= 0x20
			os.WriteFile(path+".meta", b, 0o600)
		}, "checksum does not match"},
		{"metadata truncated", func(t *testing.T, path string, _ *Config) {
			b, _ := os.ReadFile(path + ".meta")
			os.WriteFile(path+".meta", b[:len(b)/3], 0o600)
		}, "checksum does not match"},
		{"not tandem's", func(t *testing.T, path string, _ *Config) {
			os.WriteFile(path+".meta", []byte("memcached restart metadata\n"), 0o600)
		}, "not tandem's"},
		{"another layout", func(t *testing.T, path string, _ *Config) {
			edit(path, func(m string) string { return strings.Replace(m, `"Layout":1`, `"Layout":2`, 1) })
		}, "another layout"},
		{"another hash", func(t *testing.T, path string, _ *Config) {
			edit(path, func(m string) string { return regexp.MustCompile(`"Probe":\d+`).ReplaceAllString(m, `"Probe":12345`) })
		}, "shard hash differs"},
		{"bad page table", func(t *testing.T, path string, _ *Config) {
			edit(path, func(m string) string { return strings.Replace(m, `"Off":0,`, `"Off":1,`, 1) })
		}, "page table"},
		{"file truncated", func(t *testing.T, path string, _ *Config) { os.Truncate(path, 1<<20) }, "truncated or replaced"},
		{"file corrupt", func(t *testing.T, path string, _ *Config) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b := make([]byte, 64)
			f.ReadAt(b, pageAt) // inside a page the metadata lists
			for i := range b {
				b[i] ^= 0x5a
			}
			f.WriteAt(b, pageAt)
		}, "does not match its checksum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := memFilePath(t)
			clk := newFakeClock()
			cfg := restartConfig(path, clk)
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fillForRestart(t, c, clk, cfg.MaxItemSize)
			if _, err := c.SaveRestart(); err != nil {
				t.Fatal(err)
			}
			pageAt = savedPageOffset(t, c)
			closeMemFile(c.file)
			tc.change(t, path, &cfg)
			c2, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := c2.Restart()
			if r.Warm || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("restart: %+v, want cold because %q", r, tc.reason)
			}
			if n := c2.Stats().CurrItems; n != 0 {
				t.Fatalf("cold start with %d items", n)
			}
			for i := range 600 {
				wantMiss(t, c2, fmt.Sprintf("key:%d", i))
			}
			if _, err := os.Stat(path + ".meta"); !os.IsNotExist(err) {
				t.Fatalf("the metadata file is still there: %v", err)
			}
			// The cold cache works on the emptied file.
			fx := fillForRestart(t, c2, clk, cfg.MaxItemSize)
			checkInvariants(t, c2)
			fx.check(t, c2)
		})
	}
}

func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// savedPageOffset returns the file offset of the middle of the first page in the file that
// holds items.
func savedPageOffset(t *testing.T, c *Cache) int64 {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		for p := range s.pages {
			if pg := &s.pages[p]; pg.kind == inFile && pg.live > 0 {
				return s.file.off + int64(pg.off) + int64(len(pg.mem)/2)
			}
		}
	}
	t.Fatal("no saved page in the file")
	return 0
}

// TestRestartUnderPressure saves a cache that has been evicting and moving pages between
// classes, and checks that the restored one keeps its invariants and keeps working.
func TestRestartUnderPressure(t *testing.T) {
	path := memFilePath(t)
	clk := newFakeClock()
	cfg := Config{MaxBytes: 4 << 20, MemoryFile: path, Clock: clk}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40_000 {
		v := bytes.Repeat([]byte{'x'}, 50+(i*37)%3000)
		c.Store(Set, []byte(fmt.Sprintf("k%d", i%9000)), v, 0, 0, 0)
		if i%3 == 0 {
			get(c, fmt.Sprintf("k%d", (i*7)%9000))
		}
	}
	if c.Stats().Evictions == 0 {
		t.Fatal("no evictions: the test does not test pressure")
	}
	checkInvariants(t, c)
	want := map[string]string{}
	for i := range 9000 {
		key := fmt.Sprintf("k%d", i)
		if _, ok := c.Peek(nil, []byte(key), valueAppender{}); ok {
			v, _ := c.Peek(nil, []byte(key), valueAppender{})
			want[key] = string(v)
		}
	}
	sv, err := c.SaveRestart()
	if err != nil {
		t.Fatal(err)
	}
	closeMemFile(c.file)
	c2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := c2.Restart(); !r.Warm || r.Items != sv.Items || sv.Items+sv.Lost != len(want) {
		t.Fatalf("restart %+v after saving %+v of %d items", r, sv, len(want))
	}
	checkInvariants(t, c2)
	kept := 0
	for key, v := range want {
		if got, ok := c2.Peek(nil, []byte(key), valueAppender{}); ok {
			if string(got) != v {
				t.Fatalf("%s: wrong value after the restart", key)
			}
			kept++
		}
	}
	if kept != sv.Items {
		t.Fatalf("%d items found after the restart, %d saved", kept, sv.Items)
	}
	for i := range 20_000 {
		c2.Store(Set, []byte(fmt.Sprintf("n%d", i)), bytes.Repeat([]byte{'y'}, 50+(i*53)%3000), 0, 0, 0)
	}
	checkInvariants(t, c2)
}

// BenchmarkRestart saves and restores a cache of 1,000,000 items with 100-byte values (the
// issue's restart-time case, in process: no server start, no network). One op is one
// SaveRestart and one New that restores; save-ms and restore-ms split it.
func BenchmarkRestart(b *testing.B) {
	const items = 1_000_000
	path := memFilePath(b)
	cfg := Config{MaxBytes: 512 << 20, MemoryFile: path}
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	val := bytes.Repeat([]byte{'v'}, 100)
	key := []byte("key:0000000000")
	for i := range items {
		copy(key[4:], fmt.Sprintf("%010d", i))
		if out, _ := c.Store(Set, key, val, 0, 0, 0); out != Stored {
			b.Fatal(out)
		}
	}
	if n := c.Stats().CurrItems; n != items {
		b.Fatalf("%d items stored of %d", n, items)
	}
	var save, restore time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.SaveRestart(); err != nil {
			b.Fatal(err)
		}
		closeMemFile(c.file)
		t1 := time.Now()
		if c, err = New(cfg); err != nil {
			b.Fatal(err)
		}
		save, restore = save+t1.Sub(t0), restore+time.Since(t1)
		if r := c.Restart(); !r.Warm || r.Items != items {
			b.Fatalf("restart %+v", r)
		}
	}
	b.ReportMetric(float64(save.Milliseconds())/float64(b.N), "save-ms")
	b.ReportMetric(float64(restore.Milliseconds())/float64(b.N), "restore-ms")
}

// FuzzRestartMeta feeds New metadata bodies (with a valid checksum line, so that the fuzzer gets
// past it) over a memory file saved by a real cache: whatever the body says, New must not fail
// or panic, must start cold or restore a cache that keeps its invariants, and must never serve a
// value that was not stored under its key.
func FuzzRestartMeta(f *testing.F) {
	dir := f.TempDir()
	src := filepath.Join(dir, "saved")
	cfg := Config{MaxBytes: 2 << 20, MaxItemSize: 64 << 10, Shards: 2, MemoryFile: src}
	c, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 300 {
		c.Store(Set, fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{byte(i)}, i*37%5000), uint64(i), 0, 0)
	}
	c.Delete([]byte("k7"))
	if _, err := c.SaveRestart(); err != nil {
		f.Fatal(err)
	}
	closeMemFile(c.file)
	meta, err := os.ReadFile(src + ".meta")
	if err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		f.Fatal(err)
	}
	_, body, _ := bytes.Cut(meta, []byte{'\n'})
	f.Add(body)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"Layout":1,"Pages":[[{"Off":0,"Len":4096,"Class":3,"Carved":999999}],[]]}`))
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		n++
		path := filepath.Join(dir, fmt.Sprintf("f%d", n))
		defer os.Remove(path)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		head := fmt.Sprintf("%s %08x\n", metaMagic, crc32.Checksum(body, castagnoli))
		if err := os.WriteFile(path+".meta", append([]byte(head), body...), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := cfg
		cfg.MemoryFile = path
		c, err := New(cfg)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		defer closeMemFile(c.file)
		checkInvariants(t, c)
		for i := range 300 {
			v, ok := c.Peek(nil, fmt.Appendf(nil, "k%d", i), valueAppender{})
			if ok && !bytes.Equal(v, bytes.Repeat([]byte{byte(i)}, i*37%5000)) {
				t.Fatalf("k%d: restored with another value", i)
			}
		}
	})
}
