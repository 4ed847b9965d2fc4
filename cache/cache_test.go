package cache

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"minimal", Config{MaxBytes: 1 << 20}, true},
		{"zero bytes", Config{}, false},
		{"negative bytes", Config{MaxBytes: -1}, false},
		{"item too small", Config{MaxBytes: 1 << 20, MaxItemSize: ItemOverhead}, false},
		{"item over budget", Config{MaxBytes: 1000, MaxItemSize: 1001}, false},
		{"item equals budget", Config{MaxBytes: 1000, MaxItemSize: 1000}, true},
		{"shards not power of two", Config{MaxBytes: 1 << 20, Shards: 3}, false},
		{"shards negative", Config{MaxBytes: 1 << 20, Shards: -4}, false},
		{"shards ok", Config{MaxBytes: 1 << 20, Shards: 8}, true},
		{"budget below overhead", Config{MaxBytes: ItemOverhead}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%+v) = %v, want ok=%v", tt.cfg, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			if _, nerr := New(tt.cfg); (nerr == nil) != tt.ok {
				t.Fatalf("New(%+v) = %v, want ok=%v", tt.cfg, nerr, tt.ok)
			}
		})
	}
}

func TestLayout(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		wantShards int
	}{
		{"default 64m 1m items", Config{MaxBytes: 64 << 20}, 4},
		{"default 16m", Config{MaxBytes: 16 << 20}, 1},
		{"default 1g", Config{MaxBytes: 1 << 30}, 64},
		{"default 512m 16m items", Config{MaxBytes: 512 << 20, MaxItemSize: 16 << 20}, 16},
		{"explicit fits once", Config{MaxBytes: 64 << 20, Shards: 64}, 64},
		{"explicit too many", Config{MaxBytes: 64 << 20, Shards: 128}, 64},
		{"tiny", Config{MaxBytes: 4096, MaxItemSize: 4096}, 1},
		{"small items", Config{MaxBytes: 1 << 20, MaxItemSize: 1024}, 1},
		{"explicit small items", Config{MaxBytes: 1 << 20, MaxItemSize: 1024, Shards: 64}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, budget := tt.cfg.layout()
			if n != tt.wantShards {
				t.Fatalf("shards = %d, want %d", n, tt.wantShards)
			}
			if budget < tt.cfg.maxItemSize() {
				t.Fatalf("budget %d cannot hold an item of %d", budget, tt.cfg.maxItemSize())
			}
			if int64(n)*budget > tt.cfg.MaxBytes {
				t.Fatalf("%d shards x %d bytes exceed MaxBytes %d", n, budget, tt.cfg.MaxBytes)
			}
		})
	}
}

func TestOutcomeStrings(t *testing.T) {
	for _, tt := range []struct {
		name      string
		got, want string
	}{
		{"Stored", Stored.String(), "Stored"},
		{"NotStored", NotStored.String(), "NotStored"},
		{"Exists", Exists.String(), "Exists"},
		{"NotFound", NotFound.String(), "NotFound"},
		{"TooLarge", TooLarge.String(), "TooLarge"},
		{"NoMemory", NoMemory.String(), "NoMemory"},
		{"Deleted", Deleted.String(), "Deleted"},
		{"Touched", Touched.String(), "Touched"},
		{"NonNumeric", NonNumeric.String(), "NonNumeric"},
		{"Outcome(0)", Outcome(0).String(), "Outcome(0)"},
		{"Outcome(10)", Outcome(10).String(), "Outcome(10)"},
		{"Set", Set.String(), "Set"},
		{"Add", Add.String(), "Add"},
		{"Replace", Replace.String(), "Replace"},
		{"Append", Append.String(), "Append"},
		{"Prepend", Prepend.String(), "Prepend"},
		{"CAS", CAS.String(), "CAS"},
		{"StoreMode(99)", StoreMode(99).String(), "StoreMode(99)"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestStoreModes runs one storage command against a key that is missing, or holds "old" with
// flags 7 and cas id stored in oldCAS.
func TestStoreModes(t *testing.T) {
	const wrongCAS = 1 << 40
	tests := []struct {
		name      string
		present   bool
		mode      StoreMode
		value     string
		flags     uint64
		cas       uint64 // for CAS; useOldCAS picks the current one
		useOldCAS bool
		want      Outcome
		wantValue string // "" = miss
		wantFlags uint64
	}{
		{"set missing", false, Set, "new", 3, 0, false, Stored, "new", 3},
		{"set present", true, Set, "new", 3, 0, false, Stored, "new", 3},
		{"add missing", false, Add, "new", 3, 0, false, Stored, "new", 3},
		{"add present", true, Add, "new", 3, 0, false, NotStored, "old", 7},
		{"replace missing", false, Replace, "new", 3, 0, false, NotStored, "", 0},
		{"replace present", true, Replace, "new", 3, 0, false, Stored, "new", 3},
		{"append missing", false, Append, "new", 3, 0, false, NotStored, "", 0},
		{"append present keeps flags", true, Append, "new", 3, 0, false, Stored, "oldnew", 7},
		{"prepend missing", false, Prepend, "new", 3, 0, false, NotStored, "", 0},
		{"prepend present keeps flags", true, Prepend, "new", 3, 0, false, Stored, "newold", 7},
		{"cas missing", false, CAS, "new", 3, 5, false, NotFound, "", 0},
		{"cas mismatch", true, CAS, "new", 3, wrongCAS, false, Exists, "old", 7},
		{"cas match", true, CAS, "new", 3, 0, true, Stored, "new", 3},
		{"set empty value", true, Set, "", 1, 0, false, Stored, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Config{})
			var oldCAS uint64
			if tt.present {
				_, oldCAS = c.Store(Set, []byte("k"), []byte("old"), 7, 0, 0)
			}
			cas := tt.cas
			if tt.useOldCAS {
				cas = oldCAS
			}
			got, newCAS := c.Store(tt.mode, []byte("k"), []byte(tt.value), tt.flags, 0, cas)
			if got != tt.want {
				t.Fatalf("%v %q: got %v, want %v", tt.mode, tt.value, got, tt.want)
			}
			if (got == Stored) != (newCAS != 0) {
				t.Fatalf("outcome %v with cas %d", got, newCAS)
			}
			it, ok := get(c, "k")
			wantHit := tt.wantValue != "" || (tt.want == Stored) || tt.present
			if ok != wantHit {
				t.Fatalf("get after %v: hit=%v, want %v", tt.mode, ok, wantHit)
			}
			if ok && (string(it.Value) != tt.wantValue || it.Flags != tt.wantFlags) {
				t.Fatalf("get after %v: %q flags %d, want %q flags %d", tt.mode, it.Value, it.Flags, tt.wantValue, tt.wantFlags)
			}
			if got == Stored && it.CAS != newCAS {
				t.Fatalf("get cas %d, store returned %d", it.CAS, newCAS)
			}
			checkInvariants(t, c)
		})
	}
}

func TestStoreCounters(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxItemSize: 1000})
	set(t, c, "a", "1")
	c.Store(Add, []byte("a"), []byte("2"), 0, 0, 0)
	c.Store(CAS, []byte("a"), []byte("2"), 0, 0, 12345)
	c.Store(CAS, []byte("zz"), []byte("2"), 0, 0, 1)
	it, _ := get(c, "a")
	c.Store(CAS, []byte("a"), []byte("3"), 0, 0, it.CAS)
	c.Store(Set, []byte("a"), make([]byte, 1000), 0, 0, 0)
	st := c.Stats()
	want := Stats{CmdSet: 5, TotalItems: 2, CasBadval: 1, CasMisses: 1, CasHits: 1, StoreTooLarge: 1, CmdGet: 1, GetHits: 1}
	got := Stats{CmdSet: st.CmdSet, TotalItems: st.TotalItems, CasBadval: st.CasBadval, CasMisses: st.CasMisses,
		CasHits: st.CasHits, StoreTooLarge: st.StoreTooLarge, CmdGet: st.CmdGet, GetHits: st.GetHits}
	if got != want {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	if st.CurrItems != 0 {
		t.Fatalf("curr_items %d after a too-large set removed the key", st.CurrItems)
	}
}

func TestTooLargeBoundary(t *testing.T) {
	const max = 200
	c, _ := newTestCache(t, Config{MaxBytes: 1 << 20, MaxItemSize: max})
	key := []byte("key")
	fits := make([]byte, max-ItemOverhead-len(key))
	if out, _ := c.Store(Set, key, fits, 0, 0, 0); out != Stored {
		t.Fatalf("item of exactly MaxItemSize: got %v, want Stored", out)
	}
	if out, _ := c.Store(Set, key, append(fits, 'x'), 0, 0, 0); out != TooLarge {
		t.Fatalf("item one byte over: got %v, want TooLarge", out)
	}
	wantMiss(t, c, "key") // like memcached, a failed set removes the old value
	set(t, c, "key", "v")
	if out, _ := c.Store(Add, key, append(fits, 'x'), 0, 0, 0); out != TooLarge {
		t.Fatalf("add one byte over: got %v, want TooLarge", out)
	}
	wantValue(t, c, "key", "v") // only set removes the old value
	// append whose result would be too large: NOT_STORED, value unchanged (memcached)
	set(t, c, "key", string(fits[:len(fits)-1]))
	if out, _ := c.Store(Append, key, []byte("ab"), 0, 0, 0); out != NotStored {
		t.Fatalf("append over the limit: got %v, want NotStored", out)
	}
	if out, _ := c.Store(Append, key, []byte("a"), 0, 0, 0); out != Stored {
		t.Fatalf("append to exactly the limit: got %v, want Stored", out)
	}
	if out, _ := c.Store(Set, make([]byte, MaxKeyLen+1), nil, 0, 0, 0); out != TooLarge {
		t.Fatalf("huge key: got %v, want TooLarge", out)
	}
}

func TestCASUnique(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	seen := map[uint64]string{}
	record := func(what string, cas uint64) {
		t.Helper()
		if cas == 0 {
			t.Fatalf("%s: cas 0", what)
		}
		if prev, dup := seen[cas]; dup {
			t.Fatalf("%s: cas %d already used by %s", what, cas, prev)
		}
		seen[cas] = what
	}
	for i := range 50 {
		k := []byte(fmt.Sprint("k", i%5))
		_, cas := c.Store(Set, k, []byte("1"), 0, 0, 0)
		record("set", cas)
		_, cas = c.Store(Append, k, []byte("0"), 0, 0, 0)
		record("append", cas)
		res, _ := c.MetaArith(k, true, 1, MetaArithOptions{})
		record("incr", res.CAS)
	}
	// touch keeps the cas id (memcached)
	it, _ := get(c, "k0")
	c.Touch([]byte("k0"), 100)
	if it2, _ := get(c, "k0"); it2.CAS != it.CAS {
		t.Fatalf("touch changed cas %d -> %d", it.CAS, it2.CAS)
	}
}

func TestDisableCAS(t *testing.T) {
	c, _ := newTestCache(t, Config{DisableCAS: true})
	out, cas := c.Store(Set, []byte("k"), []byte("v"), 0, 0, 0)
	if out != Stored || cas != 0 {
		t.Fatalf("set: %v cas %d, want Stored cas 0", out, cas)
	}
	if it := wantValue(t, c, "k", "v"); it.CAS != 0 {
		t.Fatalf("get cas %d, want 0", it.CAS)
	}
	// memcached 1.6.18 -C: NOT_FOUND for a missing key, else always EXISTS.
	for _, cas := range []uint64{0, 1, 7, 1<<64 - 1} {
		if out, _ := c.Store(CAS, []byte("k"), []byte("w"), 0, 0, cas); out != Exists {
			t.Fatalf("cas %d: %v, want Exists", cas, out)
		}
	}
	if out, _ := c.Store(CAS, []byte("nope"), []byte("w"), 0, 0, 0); out != NotFound {
		t.Fatalf("cas on a missing key: %v, want NotFound", out)
	}
	if _, out := c.Arith([]byte("k"), true, 1); out != NonNumeric {
		t.Fatalf("incr without cas under DisableCAS: %v", out)
	}
}

func TestDeleteAndTouch(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	if got := c.Delete([]byte("k")); got != NotFound {
		t.Fatalf("delete missing: %v", got)
	}
	set(t, c, "k", "v")
	if got := c.Delete([]byte("k")); got != Deleted {
		t.Fatalf("delete: %v", got)
	}
	wantMiss(t, c, "k")
	if got := c.Delete([]byte("k")); got != NotFound {
		t.Fatalf("second delete: %v", got)
	}
	if got := c.Touch([]byte("k"), 10); got != NotFound {
		t.Fatalf("touch missing: %v", got)
	}
	set(t, c, "k", "v") // revives the tombstone
	if got := c.Touch([]byte("k"), 10); got != Touched {
		t.Fatalf("touch: %v", got)
	}
	clk.Advance(9)
	wantValue(t, c, "k", "v")
	clk.Advance(1)
	wantMiss(t, c, "k")
	st := c.Stats()
	if st.DeleteHits != 1 || st.DeleteMisses != 2 || st.TouchHits != 1 || st.TouchMisses != 1 || st.CmdTouch != 2 || st.GetExpired != 1 {
		t.Fatalf("stats %+v", st)
	}
	checkInvariants(t, c)
}

func TestGetView(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	_, cas := c.Store(Set, []byte("k"), []byte("v"), 42, 100, 0)
	clk.Advance(5)
	it := wantValue(t, c, "k", "v")
	want := Item{Key: []byte("k"), Value: []byte("v"), Flags: 42, CAS: cas, Exptime: t0 + 100, LastAccess: t0, Fetched: false, Now: t0 + 5}
	if fmt.Sprint(it) != fmt.Sprint(want) {
		t.Fatalf("first get\n got %+v\nwant %+v", it, want)
	}
	clk.Advance(5)
	it = wantValue(t, c, "k", "v")
	if !it.Fetched || it.LastAccess != t0 {
		t.Fatalf("second get: fetched=%v last access %d, want true %d (a first fetch does not bump)", it.Fetched, it.LastAccess, t0)
	}
	// gat: touch counters, new exptime visible in the view
	var a capture
	dst, ok := c.Get([]byte("pre:"), []byte("k"), GetOptions{Touch: true, Exptime: 1000}, &a)
	if !ok || string(dst) != "pre:v" || a.it.Exptime != t0+10+1000 || a.it.LastAccess != t0+10 {
		t.Fatalf("gat: ok=%v dst=%q exptime %d last access %d (the second fetch bumped)", ok, dst, a.it.Exptime, a.it.LastAccess)
	}
	if _, ok := c.Get(nil, []byte("nope"), GetOptions{Touch: true, Exptime: 1}, &a); ok {
		t.Fatal("gat on a missing key hit")
	}
	st := c.Stats()
	if st.CmdGet != 2 || st.GetHits != 2 || st.CmdTouch != 2 || st.TouchHits != 1 || st.TouchMisses != 1 || st.GetMisses != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResetStats(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	set(t, c, "k", "v")
	get(c, "k")
	c.FlushAll(100)
	c.ResetStats()
	st := c.Stats()
	if st.CmdSet != 0 || st.CmdGet != 0 || st.TotalItems != 0 || st.CmdFlush != 0 {
		t.Fatalf("counters survive reset: %+v", st)
	}
	if st.CurrItems != 1 || st.Bytes != uint64(1+1+ItemOverhead) || st.LimitMaxbytes != 64<<20 {
		t.Fatalf("gauges wrong after reset: %+v", st)
	}
}

func TestHashCollisionKeepsBoth(t *testing.T) {
	c, _ := newTestCache(t, Config{Shards: 1})
	s := &c.shards[0]
	// Simulate a 64-bit collision: store "b" under "a"'s hash through the shard directly. The
	// index compares keys, so both stay.
	set(t, c, "a", "1")
	h := s.hash([]byte("a"))
	s.mu.Lock()
	s.now = t0
	out, _, _ := s.storeLocked(c, h, Set, []byte("b"), []byte("2"), 0, 0, 0)
	_, it := s.findLocked(h, []byte("a"))
	_, itb := s.findLocked(h, []byte("b"))
	s.mu.Unlock()
	if out != Stored || it == nil || string(it.value()) != "1" || itb == nil || string(itb.value()) != "2" {
		t.Fatalf("after collision: %v a=%v b=%v", out, it, itb)
	}
	if st := c.Stats(); st.CurrItems != 2 {
		t.Fatalf("accounting after collision: %+v", st)
	}
}

// TestStatsFieldsAreUint64 guards addCounters, which adds Stats as an array of uint64.
func TestStatsFieldsAreUint64(t *testing.T) {
	st := reflect.TypeOf(Stats{})
	for i := range st.NumField() {
		if f := st.Field(i); f.Type.Kind() != reflect.Uint64 {
			t.Errorf("Stats.%s is %v, want uint64", f.Name, f.Type)
		}
	}
}
