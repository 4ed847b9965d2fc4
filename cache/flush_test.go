package cache

import "testing"

func TestFlushImmediate(t *testing.T) {
	for _, delay := range []int64{0, -5, 1} {
		c, clk := newTestCache(t, Config{})
		set(t, c, "a", "1")
		set(t, c, "b", "2")
		c.FlushAll(delay)
		wantMiss(t, c, "a")
		if delay == 1 {
			// memcached 1.6.18: flush_all 1 sets oldest_live to now, so even a set later in
			// the same second is flushed; it is visible again from the next second.
			set(t, c, "c", "3")
			wantMiss(t, c, "c")
			clk.Advance(1)
		}
		set(t, c, "c", "3")
		wantValue(t, c, "c", "3")
		wantMiss(t, c, "b")
		if st := c.Stats(); st.CurrItems != 1 || st.CmdFlush != 1 {
			t.Fatalf("delay %d: curr_items %d cmd_flush %d, want 1 and 1", delay, st.CurrItems, st.CmdFlush)
		}
		checkInvariants(t, c)
	}
}

func TestFlushDelayed(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	set(t, c, "old", "1")
	c.FlushAll(3) // memcached: in effect from now+2 for items accessed at or before now+2
	set(t, c, "early", "2")
	clk.Advance(1)
	wantValue(t, c, "old", "1")
	wantValue(t, c, "early", "2")
	clk.Advance(1) // now+2
	wantMiss(t, c, "old")
	wantMiss(t, c, "early")
	set(t, c, "same-second", "3")
	wantMiss(t, c, "same-second")
	clk.Advance(1)
	set(t, c, "later", "4")
	wantValue(t, c, "later", "4")
	// The store's expiry sweep may reclaim "same-second" before the get finds it.
	if st := c.Stats(); st.GetFlushed+st.Reclaimed != 3 || st.GetFlushed < 2 {
		t.Fatalf("get_flushed %d + reclaimed %d, want 3", st.GetFlushed, st.Reclaimed)
	}
}

func TestFlushReplacedAndKept(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	set(t, c, "a", "1")
	c.FlushAll(100)
	c.FlushAll(1000) // replaces the pending flush, as in memcached
	clk.Advance(200)
	wantValue(t, c, "a", "1")
	c.FlushAll(0)
	set(t, c, "b", "2")
	c.FlushAll(50) // must not resurrect items flushed by the flush already in effect
	wantMiss(t, c, "a")
	wantValue(t, c, "b", "2")
	clk.Advance(49)
	wantMiss(t, c, "b")
}

func TestFlushAbsolute(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	set(t, c, "a", "1")
	c.FlushAll(t0 + 10)
	clk.Advance(8)
	wantValue(t, c, "a", "1")
	clk.Advance(1)
	wantMiss(t, c, "a")
	set(t, c, "b", "1")
	c.FlushAll(t0 - 100) // in the past: at once
	wantMiss(t, c, "b")
}

func TestFlushBySweep(t *testing.T) {
	c, clk := newTestCache(t, Config{Shards: 1})
	for i := range 50 {
		c.Store(Set, []byte{'a', byte(i)}, []byte("v"), 0, 0, 0)
	}
	c.FlushAll(2)
	clk.Advance(2)
	for i := range 50 {
		c.Store(Set, []byte{'b', byte(i)}, []byte("v"), 0, 0, 0)
	}
	c.Maintain(1000)
	if st := c.Stats(); st.CurrItems != 50 || st.Reclaimed != 50 {
		t.Fatalf("curr_items %d reclaimed %d, want 50 and 50", st.CurrItems, st.Reclaimed)
	}
	checkInvariants(t, c)
}
