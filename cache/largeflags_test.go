package cache

import (
	"fmt"
	"strings"
	"testing"
)

// TestLargeClientFlags: with Config.LargeClientFlags a record keeps 64-bit client flags through
// every change that keeps an item's flags (append, prepend, incr in place and into a new chunk,
// md x, touch), at the price of 4 bytes per record; without it the cache keeps the low 32 bits
// and a record is exactly what it was before the option existed.
func TestLargeClientFlags(t *testing.T) {
	const big = uint64(0xfedc_ba98_7654_3210)
	for _, large := range []bool{false, true} {
		want := big
		tail := 0
		if !large {
			want, tail = big&0xffff_ffff, 0
		} else {
			tail = flagsTail
		}
		c, _ := newTestCache(t, Config{MaxBytes: 8 << 20, Shards: 1, LargeClientFlags: large})
		flagsOf := func(key string) uint64 {
			t.Helper()
			it, ok := get(c, key)
			if !ok {
				t.Fatalf("large=%v: %s missing", large, key)
			}
			return it.Flags
		}
		for _, tc := range []struct {
			name string
			do   func(key string)
		}{
			{"set", func(string) {}},
			{"append", func(k string) { c.Store(Append, []byte(k), []byte("123"), 0, 0, 0) }},
			{"prepend grows the chunk", func(k string) { c.Store(Prepend, []byte(k), make([]byte, 500), 0, 0, 0) }},
			{"incr in place", func(k string) { c.Arith([]byte(k), true, 1) }},
			{"incr grows the number", func(k string) { c.Arith([]byte(k), true, 1<<60) }},
			{"touch", func(k string) { c.Get(nil, []byte(k), GetOptions{Touch: true, Exptime: 100}, valueAppender{}) }},
			{"a record of its own page", func(k string) { c.Store(Set, []byte(k), make([]byte, 600_000), big, 0, 0) }},
			{"append to it", func(k string) {
				c.Store(Set, []byte(k), make([]byte, 600_000), big, 0, 0)
				c.Store(Append, []byte(k), make([]byte, 1000), 0, 0, 0)
			}},
		} {
			key := "k-" + tc.name
			if strings.HasPrefix(tc.name, "incr") {
				c.Store(Set, []byte(key), []byte("9"), big, 0, 0)
			} else {
				c.Store(Set, []byte(key), []byte("v"), big, 0, 0)
			}
			tc.do(key)
			if got := flagsOf(key); got != want {
				t.Fatalf("large=%v %s: flags %#x, want %#x", large, tc.name, got, want)
			}
		}
		// md x gives the emptied item the flags it is told.
		c.Store(Set, []byte("x"), []byte("value"), 1, 0, 0)
		if out := c.MetaDelete([]byte("x"), MetaDeleteOptions{RemoveValue: true, Flags: big}); out != Deleted {
			t.Fatalf("md x: %v", out)
		}
		if got := flagsOf("x"); got != want {
			t.Fatalf("large=%v md x: flags %#x, want %#x", large, got, want)
		}
		// The record's chunk: header, key and value, and the tail only with the option.
		key, value := []byte("size-probe"), make([]byte, 100)
		c.Store(Set, key, value, 7, 0, 0)
		s, h := c.lock(key)
		_, r := s.findLocked(h, key)
		size, n := cap(r), hdrSize+len(key)+len(value)+tail
		s.mu.Unlock()
		if size != sizeClass(n) {
			t.Fatalf("large=%v: the record's chunk is %d bytes, want %d (a record of %d)", large, size, sizeClass(n), n)
		}
		checkInvariants(t, c)
	}
}

// TestRestartLargeClientFlags: a memory file saved with --large-client-flags restores its
// 64-bit flags under the same option and starts cold without it; the file of a cache without
// the option says nothing of it, so it reads as it did before the option existed.
func TestRestartLargeClientFlags(t *testing.T) {
	for _, tc := range []struct {
		name         string
		saved, after bool
		warm         bool
	}{
		{"kept on", true, true, true},
		{"turned off", true, false, false},
		{"turned on", false, true, false},
		{"kept off", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := memFilePath(t)
			clk := newFakeClock()
			cfg := restartConfig(path, clk)
			cfg.LargeClientFlags = tc.saved
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fx := fillForRestart(t, c, clk, cfg.MaxItemSize)
			if _, err := c.SaveRestart(); err != nil {
				t.Fatal(err)
			}
			closeMemFile(c.file)
			if !tc.saved {
				if b, err := readFileString(path + ".meta"); err != nil || strings.Contains(b, "LargeClientFlags") {
					t.Fatalf("metadata without the option mentions it (%v):\n%s", err, b)
				}
			}
			cfg.LargeClientFlags = tc.after
			c2, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := c2.Restart()
			if r.Warm != tc.warm {
				t.Fatalf("restart %+v, want warm %v", r, tc.warm)
			}
			if !tc.warm {
				if !strings.Contains(r.Reason, "--large-client-flags changed") || c2.Stats().CurrItems != 0 {
					t.Fatalf("cold restart %+v with %d items, want the option named", r, c2.Stats().CurrItems)
				}
				return
			}
			checkInvariants(t, c2)
			fx.check(t, c2)
		})
	}
}

// TestLargeClientFlagsSurvivePageMoves: a page given to another size class moves its live
// records to free chunks of their class elsewhere (freePageLocked); their flags' tail moves
// with them.
func TestLargeClientFlagsSurvivePageMoves(t *testing.T) {
	const big = uint64(0xabcd) << 32
	c, _ := newTestCache(t, Config{MaxBytes: 4 << 20, Shards: 1, LargeClientFlags: true})
	key := func(i int) string { return "small-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i) }
	n := 0
	for ; c.Stats().Bytes < 2<<20; n++ {
		c.Store(Set, []byte(key(n)), make([]byte, 100), big|uint64(n), 0, 0)
	}
	for i := 0; i < n; i += 2 {
		c.Delete([]byte(key(i))) // free chunks on every page of the class
	}
	for i := 0; c.Stats().Evictions == 0 && i < 100_000; i++ {
		c.Store(Set, []byte("large-"+itoa(i)), make([]byte, 3000), big, 0, 0)
	}
	if c.Stats().Evictions == 0 {
		t.Fatal("no evictions: the cache never made room")
	}
	found := 0
	for i := 1; i < n; i += 2 {
		if it, ok := get(c, key(i)); ok {
			found++
			if it.Flags != big|uint64(i) {
				t.Fatalf("%s: flags %#x after the page moves, want %#x", key(i), it.Flags, big|uint64(i))
			}
		}
	}
	if found == 0 {
		t.Fatal("no small item left to check")
	}
	checkInvariants(t, c)
}

func itoa(i int) string { return fmt.Sprint(i) }
