package cache

import (
	"math"
	"testing"
)

func TestStoredExptime(t *testing.T) {
	const now = t0
	tests := []struct {
		name    string
		exptime int64
		want    int64
	}{
		{"never", 0, 0},
		{"negative", -1, 1},
		{"very negative", math.MinInt64, 1},
		{"relative 1", 1, now + 1},
		{"relative max", MaxRelativeExptime, now + MaxRelativeExptime},
		{"absolute just over", MaxRelativeExptime + 1, MaxRelativeExptime + 1},
		{"absolute future", now + 500, now + 500},
		{"clamped", math.MaxUint32 + 10, math.MaxUint32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StoredExptime(tt.exptime, now); got != tt.want {
				t.Fatalf("StoredExptime(%d) = %d, want %d", tt.exptime, got, tt.want)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	tests := []struct {
		name    string
		exptime int64
		visible []int64 // seconds after the store at which the item must be visible
		gone    int64   // first second at which it must be gone; -1 = never within the test
	}{
		{"never", 0, []int64{0, 1, 1e6}, -1},
		{"relative 10", 10, []int64{0, 9}, 10},
		{"relative 1", 1, []int64{0}, 1},
		{"negative", -1, nil, 0},
		{"absolute past", t0 - 1, nil, 0},
		{"absolute now", t0, nil, 0},
		{"absolute future", t0 + 3000000, []int64{0, 2999999}, 3000000},
		{"absolute before 30 days", MaxRelativeExptime + 1, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, clk := newTestCache(t, Config{})
			set(t, c, "k", "old")
			out, _ := c.Store(Set, []byte("k"), []byte("v"), 0, tt.exptime, 0)
			if out != Stored {
				t.Fatalf("store: %v", out)
			}
			at := int64(0)
			for _, v := range tt.visible {
				clk.Advance(v - at)
				at = v
				wantValue(t, c, "k", "v")
			}
			if tt.gone >= 0 {
				clk.Advance(tt.gone - at)
				wantMiss(t, c, "k") // the old value must not come back either
				if out, _ := c.Store(Add, []byte("k"), []byte("w"), 0, 0, 0); out != Stored {
					t.Fatalf("add after expiry: %v", out)
				}
			}
			checkInvariants(t, c)
		})
	}
}

func TestExpiredItemSemantics(t *testing.T) {
	c, clk := newTestCache(t, Config{})
	c.Store(Set, []byte("k"), []byte("5"), 0, 10, 0)
	clk.Advance(10)
	checks := []struct {
		name string
		got  Outcome
		want Outcome
	}{
		{"replace", first(c.Store(Replace, []byte("k"), []byte("x"), 0, 0, 0)), NotStored},
		{"append", first(c.Store(Append, []byte("k"), []byte("x"), 0, 0, 0)), NotStored},
		{"cas", first(c.Store(CAS, []byte("k"), []byte("x"), 0, 0, 1)), NotFound},
		{"delete", c.Delete([]byte("k")), NotFound},
		{"touch", c.Touch([]byte("k"), 0), NotFound},
		{"incr", second(c.Arith([]byte("k"), true, 1)), NotFound},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s on expired item: %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if st := c.Stats(); st.GetExpired != 1 || st.CurrItems != 0 {
		t.Errorf("get_expired %d curr_items %d, want 1 and 0", st.GetExpired, st.CurrItems)
	}
}

func TestTouchNegativeExpires(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	set(t, c, "k", "v")
	if got := c.Touch([]byte("k"), -1); got != Touched {
		t.Fatalf("touch: %v", got)
	}
	wantMiss(t, c, "k")
	set(t, c, "g", "v")
	var a capture
	if _, ok := c.Get(nil, []byte("g"), GetOptions{Touch: true, Exptime: -1}, &a); !ok {
		t.Fatal("gat -1 must still return the value once")
	}
	wantMiss(t, c, "g")
}

func TestSweepReclaimsExpired(t *testing.T) {
	c, clk := newTestCache(t, Config{Shards: 1})
	for i := range 100 {
		c.Store(Set, []byte{'e', byte(i)}, []byte("v"), 0, 5, 0)
	}
	clk.Advance(5)
	for i := range 100 {
		c.Store(Set, []byte{'n', byte(i)}, []byte("v"), 0, 0, 0)
	}
	c.Maintain(1000)
	st := c.Stats()
	if st.CurrItems != 100 || st.Reclaimed != 100 || st.ExpiredUnfetched != 100 {
		t.Fatalf("after sweep: curr_items %d reclaimed %d expired_unfetched %d, want 100 each",
			st.CurrItems, st.Reclaimed, st.ExpiredUnfetched)
	}
	checkInvariants(t, c)
}

func first(o Outcome, _ uint64) Outcome  { return o }
func second(_ uint64, o Outcome) Outcome { return o }
