package cache

import "testing"

func metaGet(c *Cache, key string, opt MetaGetOptions) (Item, bool) {
	var a capture
	_, ok := c.MetaGet(nil, []byte(key), opt, &a)
	return a.it, ok
}

func TestMetaGetStaleAndWin(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	c.Store(Set, []byte("k"), []byte("v"), 0, 0, 0)
	if it, ok := metaGet(c, "k", MetaGetOptions{}); !ok || it.Stale || it.Win || it.WinSentBefore {
		t.Fatalf("fresh item: %+v %v", it, ok)
	}
	if out := c.MetaDelete([]byte("k"), MetaDeleteOptions{Invalidate: true}); out != Deleted {
		t.Fatalf("invalidate = %v", out)
	}
	it, ok := metaGet(c, "k", MetaGetOptions{})
	if !ok || !it.Stale || !it.Win || it.WinSentBefore {
		t.Fatalf("first get of a stale item must win: %+v", it)
	}
	it, _ = metaGet(c, "k", MetaGetOptions{})
	if !it.Stale || it.Win || !it.WinSentBefore {
		t.Fatalf("second get must see the token taken: %+v", it)
	}
	// A CAS store below the item's CAS keeps it stale; a plain set clears it.
	if out, _ := c.MetaStore(CAS, []byte("k"), []byte("w"), 0, 0, 1, MetaStoreOptions{Invalidate: true}); out != Stored {
		t.Fatalf("stale cas store = %v", out)
	}
	if it, _ = metaGet(c, "k", MetaGetOptions{}); string(it.Value) != "w" || !it.Stale || !it.WinSentBefore {
		t.Fatalf("after stale store: %+v", it)
	}
	c.Store(Set, []byte("k"), []byte("x"), 0, 0, 0)
	if it, _ = metaGet(c, "k", MetaGetOptions{}); it.Stale || it.WinSentBefore {
		t.Fatalf("set must clear stale state: %+v", it)
	}
}

func TestMetaGetVivifyAndRecache(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	it, ok := metaGet(c, "v", MetaGetOptions{Vivify: true, VivifyExpt: 30})
	if !ok || !it.Created || !it.Win || len(it.Value) != 0 || it.Exptime != 0 {
		t.Fatalf("vivify: %+v %v", it, ok)
	}
	if it, _ = metaGet(c, "v", MetaGetOptions{Vivify: true}); it.Created || it.Win || !it.WinSentBefore || it.Exptime != t0+30 {
		t.Fatalf("second vivify get: %+v", it)
	}
	if st := c.Stats(); st.CmdSet != 0 || st.GetHits != 2 {
		t.Fatalf("vivify counts: cmd_set %d get_hits %d", st.CmdSet, st.GetHits)
	}
	c.Store(Set, []byte("r"), []byte("x"), 0, 100, 0)
	if it, _ = metaGet(c, "r", MetaGetOptions{Recache: true, RecacheExpt: 30}); it.Win {
		t.Fatal("TTL 100 is not below 30")
	}
	clk.Advance(80)
	if it, _ = metaGet(c, "r", MetaGetOptions{Recache: true, RecacheExpt: 30}); !it.Win {
		t.Fatal("TTL 20 is below 30: must win")
	}
	if it, _ = metaGet(c, "r", MetaGetOptions{Recache: true, RecacheExpt: 30}); it.Win || !it.WinSentBefore {
		t.Fatal("token already sent")
	}
	// T before R: R sees the touched TTL.
	c.Store(Set, []byte("t"), []byte("x"), 0, 100, 0)
	if it, _ = metaGet(c, "t", MetaGetOptions{Touch: true, TouchExptime: 10, Recache: true, RecacheExpt: 30, TouchThenRecache: true}); !it.Win {
		t.Fatal("touched to 10, recache 30: must win")
	}
}

func TestMetaGetNoBump(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	c.Store(Set, []byte("k"), []byte("v"), 0, 0, 0)
	clk.Advance(5)
	if it, _ := metaGet(c, "k", MetaGetOptions{NoBump: true}); it.Fetched || it.LastAccess != t0 {
		t.Fatalf("u: %+v", it)
	}
	if it, _ := metaGet(c, "k", MetaGetOptions{}); it.Fetched || it.LastAccess != t0 || it.Now != t0+5 {
		t.Fatalf("u must not have bumped: %+v", it)
	}
	if it, _ := metaGet(c, "k", MetaGetOptions{}); !it.Fetched || it.LastAccess != t0 {
		t.Fatalf("fetched once, not bumped (memcached's rule): %+v", it)
	}
	if it, _ := metaGet(c, "k", MetaGetOptions{}); !it.Fetched || it.LastAccess != t0+5 {
		t.Fatalf("bumped: %+v", it)
	}
}

func TestMetaStoreCAS(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	k := []byte("k")
	_, id := c.Store(Set, k, []byte("a"), 0, 0, 0)
	if out, _ := c.MetaStore(Append, k, []byte("b"), 0, 0, id+1, MetaStoreOptions{}); out != Exists {
		t.Fatalf("append with a wrong cas = %v", out)
	}
	out, id2 := c.MetaStore(Append, k, []byte("b"), 0, 0, id, MetaStoreOptions{})
	if out != Stored || id2 == id {
		t.Fatalf("append with the right cas = %v %d", out, id2)
	}
	if out, _ := c.MetaStore(Add, k, []byte("z"), 0, 0, 12345, MetaStoreOptions{}); out != NotStored {
		t.Fatalf("add ignores cas = %v", out)
	}
	if out, id := c.MetaStore(Set, k, []byte("e"), 0, 0, 0, MetaStoreOptions{NewCAS: 777, KeyBinary: true}); out != Stored || id != 777 {
		t.Fatalf("explicit cas = %v %d", out, id)
	}
	var a capture
	c.Peek(nil, k, &a)
	if a.it.CAS != 777 || !a.it.KeyBinary || a.it.Fetched {
		t.Fatalf("peek: %+v", a.it)
	}
	if out, _ := c.MetaStore(CAS, k, []byte("f"), 0, 0, 777, MetaStoreOptions{}); out != Stored {
		t.Fatalf("cas with the explicit id = %v", out)
	}
}

func TestMetaDeleteCAS(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	k := []byte("k")
	_, id := c.Store(Set, k, []byte("a"), 0, 0, 0)
	if out := c.MetaDelete(k, MetaDeleteOptions{CompareCAS: true, CAS: id + 1}); out != Exists {
		t.Fatalf("delete wrong cas = %v", out)
	}
	if out := c.MetaDelete(k, MetaDeleteOptions{CompareCAS: true, CAS: id}); out != Deleted {
		t.Fatalf("delete right cas = %v", out)
	}
	if out := c.MetaDelete(k, MetaDeleteOptions{}); out != NotFound {
		t.Fatalf("delete missing = %v", out)
	}
	if st := c.Stats(); st.DeleteHits != 1 || st.DeleteMisses != 2 {
		t.Fatalf("delete counts %d/%d", st.DeleteHits, st.DeleteMisses)
	}
}

func TestMetaArith(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	k := []byte("n")
	res, out := c.MetaArith(k, true, 1, MetaArithOptions{})
	if out != NotFound {
		t.Fatalf("missing = %v", out)
	}
	res, out = c.MetaArith(k, true, 1, MetaArithOptions{Vivify: true, Initial: 5, VivifyExpt: 100})
	if out != Stored || !res.Created || res.Value != 5 || res.Exptime != 0 {
		t.Fatalf("vivify = %+v %v", res, out)
	}
	res, out = c.MetaArith(k, false, 2, MetaArithOptions{Touch: true, Exptime: 10})
	if out != Stored || res.Value != 3 || res.Exptime != t0+100 {
		t.Fatalf("decr = %+v %v", res, out)
	}
	if _, out = c.MetaArith(k, true, 1, MetaArithOptions{CAS: res.CAS + 1}); out != Exists {
		t.Fatalf("cas mismatch = %v", out)
	}
	res2, _ := c.MetaArith(k, true, 1, MetaArithOptions{CAS: res.CAS})
	if res2.Value != 4 || res2.Exptime != t0+10 {
		t.Fatalf("after touch: %+v", res2)
	}
	if st := c.Stats(); st.IncrMisses != 1 || st.IncrHits != 1 || st.DecrHits != 1 || st.CmdSet != 0 {
		t.Fatalf("counts %+v", st)
	}
}

func TestMetaGetAllocs(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	c.Store(Set, []byte("k"), []byte("value"), 0, 0, 0)
	dst := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		dst, _ = c.MetaGet(dst[:0], []byte("k"), MetaGetOptions{Touch: true, TouchExptime: 5}, valueAppender{})
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// TestPeekHasNoSideEffect: Peek (me) changes no counter and no item state, and an expired item
// is a miss that stays in place (memcached's me counts no get_expired either).
func TestPeekHasNoSideEffect(t *testing.T) {
	c, clk := newTestCache(t, Config{Shards: 1})
	set(t, c, "live", "v")
	c.Store(Set, []byte("old"), []byte("v"), 0, 2, 0)
	clk.Advance(3)
	before := c.Stats()
	var a capture
	if _, ok := c.Peek(nil, []byte("old"), &a); ok {
		t.Fatal("peek returned an expired item")
	}
	if _, ok := c.Peek(nil, []byte("missing"), &a); ok {
		t.Fatal("peek hit a missing key")
	}
	if _, ok := c.Peek(nil, []byte("live"), &a); !ok || a.it.Fetched || a.it.LastAccess != t0 {
		t.Fatalf("peek live: ok=%v %+v", ok, a.it)
	}
	if after := c.Stats(); after != before {
		t.Fatalf("stats changed by Peek:\n got %+v\nwant %+v", after, before)
	}
	if it, _ := get(c, "live"); it.Fetched || it.LastAccess != t0 {
		t.Fatalf("Peek marked the item accessed: %+v", it)
	}
}

// TestMetaDeleteRemoveValue covers md's x (memcached 1.6.45): the item stays, empty, with the
// given flags and TTL and its CAS id (or NewCAS); with Invalidate it is stale too.
func TestMetaDeleteRemoveValue(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	_, id := c.Store(Set, []byte("k"), []byte("value"), 5, 0, 0)
	if out := c.MetaDelete([]byte("k"), MetaDeleteOptions{RemoveValue: true, Flags: 3}); out != Deleted {
		t.Fatalf("x = %v", out)
	}
	it, ok := metaGet(c, "k", MetaGetOptions{})
	if !ok || len(it.Value) != 0 || it.Flags != 3 || it.CAS != id || it.Stale {
		t.Fatalf("after x: %+v %v (cas want %d)", it, ok, id)
	}
	if out := c.MetaDelete([]byte("k"), MetaDeleteOptions{RemoveValue: true, Invalidate: true, NewCAS: 1 << 40}); out != Deleted {
		t.Fatalf("x I = %v", out)
	}
	if it, ok := metaGet(c, "k", MetaGetOptions{}); !ok || !it.Stale || it.CAS != 1<<40 {
		t.Fatalf("after x I: %+v %v", it, ok)
	}
	if out := c.MetaDelete([]byte("none"), MetaDeleteOptions{RemoveValue: true}); out != NotFound {
		t.Fatalf("x on a miss = %v", out)
	}
}

// TestMetaStoreValueLen covers ms's s: the stored value's length, the whole one after Append.
func TestMetaStoreValueLen(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	var n int
	c.MetaStore(Set, []byte("k"), []byte("ab"), 0, 0, 0, MetaStoreOptions{ValueLen: &n})
	if n != 2 {
		t.Fatalf("set: %d", n)
	}
	c.MetaStore(Append, []byte("k"), []byte("cde"), 0, 0, 0, MetaStoreOptions{ValueLen: &n})
	if n != 5 {
		t.Fatalf("append: %d", n)
	}
}
