package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// memoryFile returns a memory file path on tmpfs where there is one, as an operator would use.
func memoryFile(t *testing.T) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "tandem-e2e-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return filepath.Join(d, "memory_file")
		}
	}
	return filepath.Join(t.TempDir(), "memory_file")
}

// gotItem is one item as `gets` returns it.
type gotItem struct {
	flags uint32
	cas   uint64
	value []byte
}

// getsAll fetches keys with `gets`, in batches, and returns the hits.
func getsAll(t *testing.T, addr string, keys []string) map[string]gotItem {
	t.Helper()
	c := dial(t, addr)
	r := bufio.NewReaderSize(c, 1<<16)
	got := map[string]gotItem{}
	for len(keys) > 0 {
		batch := keys[:min(50, len(keys))]
		keys = keys[len(batch):]
		if _, err := io.WriteString(c, "gets "+strings.Join(batch, " ")+"\r\n"); err != nil {
			t.Fatal(err)
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("gets: %v", err)
			}
			if line == "END\r\n" {
				break
			}
			var key string
			var flags uint32
			var n int
			var cas uint64
			if _, err := fmt.Sscanf(line, "VALUE %s %d %d %d\r\n", &key, &flags, &n, &cas); err != nil {
				t.Fatalf("gets: bad line %q", line)
			}
			v := make([]byte, n+2)
			if _, err := io.ReadFull(r, v); err != nil {
				t.Fatal(err)
			}
			got[key] = gotItem{flags, cas, v[:n]}
		}
	}
	return got
}

// loadForRestart stores a mix a warm restart must keep (sizes up to near -I 2m, flags, cas'd
// items, appends, long TTLs) and must not (deleted items, items expiring within 2 seconds),
// and returns every key it used.
func loadForRestart(t *testing.T, addr string) []string {
	t.Helper()
	mc := memcache.New(addr)
	mc.Timeout = 30 * time.Second
	sizes := []int{0, 1, 10, 100, 1000, 4000, 16000, 70000, 300000}
	var keys []string
	for i := range 400 {
		key := fmt.Sprintf("restart:%d", i)
		keys = append(keys, key)
		size := sizes[i%len(sizes)]
		if i == 7 {
			size = 2<<20 - 200 // near -I 2m
		}
		it := &memcache.Item{Key: key, Value: bytes.Repeat([]byte{byte('A' + i%26)}, size), Flags: uint32(i * 31)}
		switch i % 6 {
		case 1:
			it.Expiration = 3600
		case 2:
			it.Expiration = 2 // gone by the time the restarted server is asked
		}
		if err := mc.Set(it); err != nil {
			t.Fatalf("set %s (%d bytes): %v", key, size, err)
		}
	}
	for i := range 400 {
		key := keys[i]
		switch {
		case i%9 == 4:
			if err := mc.Delete(key); err != nil {
				t.Fatalf("delete %s: %v", key, err)
			}
		case i%5 == 3 && i%6 != 2: // (gomemcache's cas sends exptime 0)
			it, err := mc.Get(key)
			if err != nil {
				t.Fatalf("get %s: %v", key, err)
			}
			it.Value = append(it.Value, "-cas"...)
			if err := mc.CompareAndSwap(it); err != nil {
				t.Fatalf("cas %s: %v", key, err)
			}
		case i%7 == 5 && i%6 != 2: // (an item of 2 s may be gone already on a loaded machine)
			if err := mc.Append(&memcache.Item{Key: key, Value: []byte("-appended")}); err != nil {
				t.Fatalf("append %s: %v", key, err)
			}
		}
	}
	return keys
}

// stopGracefully sends sig (unless 0) and waits for a clean exit.
func stopGracefully(t *testing.T, s *server, sig syscall.Signal) {
	t.Helper()
	if sig != 0 {
		_ = s.cmd.Process.Signal(sig)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.Kill()
		t.Fatalf("no exit within a minute after %v\n%s", sig, s.Log())
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after %v\n%s", code, sig, s.Log())
	}
}

// TestWarmRestart: in every mode, a graceful stop (SIGUSR1, as memcached; SIGTERM too) and a
// start with the same settings bring every item back byte-identical with its flags and cas id;
// expired and deleted items stay gone, and new cas ids continue above the old ones.
func TestWarmRestart(t *testing.T) {
	forVariants(t, func(t *testing.T, v serverVariant) {
		path := memoryFile(t)
		file := []string{"-e", path}
		sig := syscall.SIGUSR1
		if v.mode == "inline" {
			file = []string{"-o", "memory_file=" + path} // memcached's other spelling
			sig = syscall.SIGTERM
		}
		if v.mode == "goroutine" {
			file = append(file, "-A") // and stops with memcached 1.6's "shutdown graceful"
		}
		args := append(append([]string{"-m", "128", "-I", "2m"}, v.extra...), file...)
		s := startServer(t, v.mode, args...)
		if !strings.Contains(s.Log(), "cold start") || !strings.Contains(s.Log(), "no metadata file") {
			t.Fatalf("first start does not say it is cold and why:\n%s", s.Log())
		}
		keys := loadForRestart(t, s.Addr)
		before := getsAll(t, s.Addr, keys)
		st, err := serverStats(s.Addr, "")
		if err != nil {
			t.Fatal(err)
		}
		if st["evictions"] != "0" {
			t.Fatalf("evictions %s: the load must fit for the test to say anything", st["evictions"])
		}
		set, err := serverStats(s.Addr, "settings")
		if err != nil {
			t.Fatal(err)
		}
		if set["memory_file"] != path {
			t.Errorf("stats settings memory_file = %q, want %q", set["memory_file"], path)
		}
		if v.mode == "goroutine" {
			c := dial(t, s.Addr)
			if _, err := io.WriteString(c, "shutdown graceful\r\n"); err != nil {
				t.Fatal(err)
			}
			sig = 0 // the command stops it; stopGracefully only waits
		}
		stopGracefully(t, s, sig)
		if !strings.Contains(s.Log(), "memory file saved for a warm restart") {
			t.Fatalf("the stop did not save the memory file:\n%s", s.Log())
		}
		start := time.Now()
		s2 := startServer(t, v.mode, args...)
		t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
		if !strings.Contains(s2.Log(), "warm restart") {
			t.Fatalf("second start is not warm:\n%s", s2.Log())
		}
		time.Sleep(time.Until(start.Add(2500 * time.Millisecond))) // the 2-second items expire
		after := getsAll(t, s2.Addr, keys)
		var maxCAS uint64
		for i, key := range keys {
			b, a := before[key]
			got, ok := after[key]
			maxCAS = max(maxCAS, b.cas)
			switch {
			case i%6 == 2 && ok:
				t.Errorf("%s: expired before the restart, still served", key)
			case i%6 == 2:
			case ok != a:
				t.Errorf("%s: hit before the restart %v, after %v", key, a, ok)
			case ok && (got.flags != b.flags || got.cas != b.cas || !bytes.Equal(got.value, b.value)):
				t.Errorf("%s: after the restart flags %d cas %d %d bytes; before flags %d cas %d %d bytes",
					key, got.flags, got.cas, len(got.value), b.flags, b.cas, len(b.value))
			}
		}
		if len(after) < 250 {
			t.Errorf("only %d items after the restart", len(after))
		}
		c := dial(t, s2.Addr)
		if got := roundTrip(t, c, "set fresh 0 0 1\r\nx\r\ngets fresh\r\n", len("STORED\r\nVALUE fresh 0 1 ")); !strings.HasPrefix(got, "STORED\r\nVALUE fresh 0 1 ") {
			t.Fatalf("set after the restart: %q", got)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		if cas, _ := strconv.ParseUint(strings.TrimSpace(line), 10, 64); cas <= maxCAS {
			t.Errorf("cas id after the restart %d, want above %d", cas, maxCAS)
		}
		checkHealthy(t, s2)
	})
}

// TestWarmRestartColdStarts: a start that cannot trust the file starts cold, empty, with one
// logged reason, and then serves normally: other settings, a truncated or corrupted file, a
// crash (kill -9 under load, so no metadata).
func TestWarmRestartColdStarts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breakf func(t *testing.T, s *server, path string) // stops s its way
		args   []string                                   // of the second start
		reason string
	}{
		{"memory limit changed", func(t *testing.T, s *server, _ string) { stopGracefully(t, s, syscall.SIGUSR1) },
			[]string{"-m", "256"}, "-m (bytes) changed"},
		{"item size changed", func(t *testing.T, s *server, _ string) { stopGracefully(t, s, syscall.SIGUSR1) },
			[]string{"-I", "1m"}, "-I (item size limit) changed"},
		{"large client flags turned on", func(t *testing.T, s *server, _ string) { stopGracefully(t, s, syscall.SIGUSR1) },
			[]string{"--large-client-flags"}, "--large-client-flags changed"},
		{"file truncated", func(t *testing.T, s *server, path string) {
			stopGracefully(t, s, syscall.SIGUSR1)
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
		}, nil, "truncated or replaced"},
		{"file corrupted", func(t *testing.T, s *server, path string) {
			stopGracefully(t, s, syscall.SIGUSR1)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for i := range b { // flip the first bytes of item data found, wherever they are
				if b[i] == 'C' && n < 8 {
					b[i], n = 'c', n+1
				}
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, nil, "does not match its checksum"},
		{"kill -9 under load", func(t *testing.T, s *server, _ string) {
			var stop atomic.Bool
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mc := memcache.New(s.Addr)
					for i := 0; i < 100_000 && !stop.Load(); i++ {
						_ = mc.Set(&memcache.Item{Key: fmt.Sprintf("load:%d:%d", g, i%500), Value: bytes.Repeat([]byte{'z'}, 100+i%900)})
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			s.Kill()
			stop.Store(true)
			wg.Wait()
		}, nil, "no metadata file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := memoryFile(t)
			args := []string{"-m", "128", "-I", "2m", "-e", path}
			s := startServer(t, "pool", args...)
			keys := loadForRestart(t, s.Addr)
			tc.breakf(t, s, path)
			args2 := append(append([]string(nil), args...), tc.args...)
			s2 := startServer(t, "pool", args2...)
			if !strings.Contains(s2.Log(), "cold start") || !strings.Contains(s2.Log(), tc.reason) {
				t.Fatalf("want a cold start because %q:\n%s", tc.reason, s2.Log())
			}
			if got := getsAll(t, s2.Addr, keys); len(got) != 0 {
				t.Fatalf("cold start serves %d old items", len(got))
			}
			if _, err := os.Stat(path + ".meta"); !os.IsNotExist(err) {
				t.Errorf("the metadata file outlived the start: %v", err)
			}
			// The emptied file serves, and the next graceful stop makes a warm start again.
			mc := memcache.New(s2.Addr)
			if err := mc.Set(&memcache.Item{Key: "after", Value: []byte("cold")}); err != nil {
				t.Fatal(err)
			}
			stopGracefully(t, s2, syscall.SIGTERM)
			s3 := startServer(t, "pool", args2...)
			if it, err := memcache.New(s3.Addr).Get("after"); err != nil || string(it.Value) != "cold" {
				t.Fatalf("after the cold start's graceful stop: %v %v\n%s", it, err, s3.Log())
			}
			checkHealthy(t, s3)
		})
	}
}

// TestMemoryFileInUse: a second tandem given the memory file of a running one refuses to start
// (exit 1, naming the file) instead of writing over its items.
func TestMemoryFileInUse(t *testing.T) {
	path := memoryFile(t)
	s := startServer(t, "pool", "-e", path)
	_, stderr, code := runTandem(t, "-p", "0", "-e", path)
	if code != 1 || !strings.Contains(stderr, "in use by another process") {
		t.Fatalf("second tandem on %s: exit %d, stderr %q; want exit 1, in use", path, code, stderr)
	}
	checkHealthy(t, s)
}
