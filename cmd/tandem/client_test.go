package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

func newClient(addr string) *memcache.Client {
	mc := memcache.New(addr)
	mc.Timeout = 5 * time.Second
	mc.MaxIdleConns = 8
	return mc
}

// TestClientLibrary drives every mode with gomemcache.
func TestClientLibrary(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2")
		mc := newClient(s.Addr)

		if err := mc.Ping(); err != nil {
			t.Fatalf("ping: %v", err)
		}
		// set / get
		if err := mc.Set(&memcache.Item{Key: "k1", Value: []byte("hello"), Flags: 42}); err != nil {
			t.Fatalf("set: %v", err)
		}
		it, err := mc.Get("k1")
		if err != nil || string(it.Value) != "hello" || it.Flags != 42 {
			t.Fatalf("get k1 = %+v, %v; want hello flags 42", it, err)
		}
		if _, err := mc.Get("missing"); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("get missing: err %v, want ErrCacheMiss", err)
		}
		// add / replace
		if err := mc.Add(&memcache.Item{Key: "k1", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
			t.Fatalf("add existing: %v, want ErrNotStored", err)
		}
		if err := mc.Replace(&memcache.Item{Key: "nokey", Value: []byte("x")}); !errors.Is(err, memcache.ErrNotStored) {
			t.Fatalf("replace missing: %v, want ErrNotStored", err)
		}
		// multi-get
		keys := make([]string, 0, 50)
		for i := 0; i < 50; i++ {
			k := fmt.Sprintf("multi-%d", i)
			keys = append(keys, k)
			if i%2 == 0 {
				if err := mc.Set(&memcache.Item{Key: k, Value: []byte(strings.Repeat("v", i))}); err != nil {
					t.Fatal(err)
				}
			}
		}
		m, err := mc.GetMulti(keys)
		if err != nil {
			t.Fatalf("get multi: %v", err)
		}
		if len(m) != 25 {
			t.Fatalf("get multi returned %d items, want 25", len(m))
		}
		for k, it := range m {
			var i int
			fmt.Sscanf(k, "multi-%d", &i)
			if string(it.Value) != strings.Repeat("v", i) {
				t.Fatalf("multi %s = %q", k, it.Value)
			}
		}
		// cas
		it, err = mc.Get("k1")
		if err != nil {
			t.Fatal(err)
		}
		it.Value = []byte("world")
		if err := mc.CompareAndSwap(it); err != nil {
			t.Fatalf("cas: %v", err)
		}
		it.Value = []byte("stale")
		if err := mc.CompareAndSwap(it); !errors.Is(err, memcache.ErrCASConflict) {
			t.Fatalf("second cas with old unique: %v, want ErrCASConflict", err)
		}
		// incr / decr
		if err := mc.Set(&memcache.Item{Key: "n", Value: []byte("10")}); err != nil {
			t.Fatal(err)
		}
		if v, err := mc.Increment("n", 5); err != nil || v != 15 {
			t.Fatalf("incr = %d, %v; want 15", v, err)
		}
		if v, err := mc.Decrement("n", 100); err != nil || v != 0 {
			t.Fatalf("decr below zero = %d, %v; want 0", v, err)
		}
		if _, err := mc.Increment("nokey", 1); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("incr missing: %v, want ErrCacheMiss", err)
		}
		// delete
		if err := mc.Delete("k1"); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := mc.Delete("k1"); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("delete again: %v, want ErrCacheMiss", err)
		}
		// touch and expiry
		if err := mc.Set(&memcache.Item{Key: "ttl", Value: []byte("x"), Expiration: 1}); err != nil {
			t.Fatal(err)
		}
		if err := mc.Set(&memcache.Item{Key: "touched", Value: []byte("x"), Expiration: 1}); err != nil {
			t.Fatal(err)
		}
		if err := mc.Touch("touched", 100); err != nil {
			t.Fatalf("touch: %v", err)
		}
		if err := mc.Touch("nokey", 100); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("touch missing: %v", err)
		}
		time.Sleep(2100 * time.Millisecond)
		if _, err := mc.Get("ttl"); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("expired item: %v, want ErrCacheMiss", err)
		}
		if _, err := mc.Get("touched"); err != nil {
			t.Fatalf("touched item: %v", err)
		}
		// flush
		if err := mc.FlushAll(); err != nil {
			t.Fatalf("flush_all: %v", err)
		}
		if _, err := mc.Get("touched"); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("after flush_all: %v, want ErrCacheMiss", err)
		}
		// a value near the 1 MB limit and one over it
		big := make([]byte, 1000*1000)
		for i := range big {
			big[i] = byte('a' + i%26)
		}
		if err := mc.Set(&memcache.Item{Key: "big", Value: big}); err != nil {
			t.Fatalf("set 1 MB value: %v", err)
		}
		if it, err := mc.Get("big"); err != nil || string(it.Value) != string(big) {
			t.Fatalf("get 1 MB value: err %v", err)
		}
		if err := mc.Set(&memcache.Item{Key: "huge", Value: make([]byte, 2<<20)}); err == nil {
			t.Fatalf("set 2 MB value succeeded, want an error")
		}
		if err := mc.Ping(); err != nil {
			t.Fatalf("ping after too-large value: %v", err)
		}
	})
}
