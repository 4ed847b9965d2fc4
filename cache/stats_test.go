package cache

import (
	"reflect"
	"strconv"
	"testing"
)

func TestShardStatsSumToStats(t *testing.T) {
	c, clk := newTestCache(t, Config{MaxBytes: 8 << 20, Shards: 8})
	for i := range 200 {
		k := []byte("key:" + strconv.Itoa(i))
		if out, _ := c.Store(Set, k, []byte("value"), 0, 0, 0); out != Stored {
			t.Fatalf("store %s: %v", k, out)
		}
	}
	for i := range 50 {
		get(c, "key:"+strconv.Itoa(i))
		get(c, "missing:"+strconv.Itoa(i))
	}
	c.Delete([]byte("key:0"))
	clk.Advance(7)

	all := c.Stats()
	shards := c.ShardStats(nil)
	if len(shards) != c.Shards() || c.Shards() != 8 {
		t.Fatalf("got %d shard snapshots, Shards() = %d, want 8", len(shards), c.Shards())
	}
	var sum Stats
	for i, s := range shards {
		if s.Shard != i {
			t.Errorf("snapshot %d has Shard %d", i, s.Shard)
		}
		if s.Budget != 1<<20 {
			t.Errorf("shard %d budget %d, want %d", i, s.Budget, 1<<20)
		}
		if s.CurrItems > 0 && s.Age < 7 {
			t.Errorf("shard %d age %d, want >= 7 (clock advanced 7s after every store)", i, s.Age)
		}
		sum.add(&s.Stats)
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"items", sum.CurrItems, all.CurrItems},
		{"bytes", sum.Bytes, all.Bytes},
		{"index capacity", sum.IndexCapacity, all.IndexCapacity},
		{"tombstones", sum.Tombstones, all.Tombstones},
		{"get_hits", sum.GetHits, all.GetHits},
		{"get_misses", sum.GetMisses, all.GetMisses},
		{"cmd_set", sum.CmdSet, all.CmdSet},
		{"delete_hits", sum.DeleteHits, all.DeleteHits},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s: shards sum to %d, Stats says %d", ck.name, ck.got, ck.want)
		}
	}
	if sum.CurrItems != 199 || sum.GetHits != 50 {
		t.Errorf("items %d hits %d, want 199 and 50", sum.CurrItems, sum.GetHits)
	}
}

func TestShardStatsEmptyAndNoAlloc(t *testing.T) {
	c, _ := newTestCache(t, Config{MaxBytes: 1 << 20, Shards: 4})
	dst := make([]ShardStats, 0, c.Shards())
	for _, s := range c.ShardStats(dst) {
		if s.CurrItems != 0 || s.Age != 0 || s.Bytes != 0 {
			t.Errorf("empty shard %d: %+v", s.Shard, s)
		}
	}
	if n := testing.AllocsPerRun(10, func() { dst = c.ShardStats(dst[:0]) }); n != 0 {
		t.Errorf("ShardStats with room allocates %v times", n)
	}
}

// BenchmarkShardStats is the cost of one "stats items"/"stats slabs" or
// metrics scrape snapshot over the default 64 shards.
func BenchmarkShardStats(b *testing.B) {
	c, _ := newTestCache(b, Config{MaxBytes: 1 << 30})
	for i := range 100_000 {
		c.Store(Set, []byte("key:"+strconv.Itoa(i)), []byte("value"), 0, 0, 0)
	}
	dst := make([]ShardStats, 0, c.Shards())
	b.ReportAllocs()
	for b.Loop() {
		dst = c.ShardStats(dst[:0])
	}
}

// TestStatsAddEveryField checks that add sums every field of Stats: a field added to Stats but
// not to add fails here.
func TestStatsAddEveryField(t *testing.T) {
	var a, b Stats
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		va.Field(i).SetUint(uint64(i + 1))
		vb.Field(i).SetUint(uint64(1000 * (i + 1)))
	}
	a.add(&b)
	for i := range va.NumField() {
		if got, want := va.Field(i).Uint(), uint64(1001*(i+1)); got != want {
			t.Errorf("%s: got %d, want %d", va.Type().Field(i).Name, got, want)
		}
	}
}
