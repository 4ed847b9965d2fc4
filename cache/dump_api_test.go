package cache

import (
	"fmt"
	"testing"
)

// TestWalkDump: WalkDump sees what Walk sees, with the same metadata, and tells which items
// were stored with a base64 key.
func TestWalkDump(t *testing.T) {
	c, _ := newTestCache(t, Config{Shards: 4})
	for i := range 200 {
		set(t, c, fmt.Sprintf("k%03d", i), "v")
	}
	if o, _ := c.MetaStore(Set, []byte("\x00bin"), []byte("v"), 0, 0, 0, MetaStoreOptions{KeyBinary: true}); o != Stored {
		t.Fatalf("MetaStore: %v", o)
	}
	walked := map[string]ItemMeta{}
	for cur := (Cursor{}); !cur.Done(); {
		cur = c.Walk(cur, 16, func(m *ItemMeta) {
			mm := *m
			mm.Key = nil
			walked[string(m.Key)] = mm
		})
	}
	dumped := map[string]bool{}
	for cur := (Cursor{}); !cur.Done(); {
		cur = c.WalkDump(cur, 16, func(m *ItemMeta, keyBinary bool) {
			k := string(m.Key)
			if dumped[k] {
				t.Errorf("%q seen twice", k)
			}
			dumped[k] = true
			mm := *m
			mm.Key = nil
			if fmt.Sprint(mm) != fmt.Sprint(walked[k]) {
				t.Errorf("%q: WalkDump %+v, Walk %+v", k, mm, walked[k])
			}
			if keyBinary != (k == "\x00bin") {
				t.Errorf("%q: keyBinary %v", k, keyBinary)
			}
		})
	}
	if len(dumped) != 201 || len(walked) != 201 {
		t.Fatalf("WalkDump saw %d items, Walk %d, want 201", len(dumped), len(walked))
	}
}
