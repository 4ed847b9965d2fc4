package cache

import (
	"math"
	"strconv"
	"testing"
)

// Cases checked against memcached 1.6.18 (safe_strtoull semantics).
func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"100", 100, true},
		{"  5 ", 5, true},
		{"5 abc", 5, true},
		{"5\t1", 5, true},
		{"5\x00x", 5, true},
		{"-0", 0, true},
		{"-18446744073709551615", 1, true},
		{"+5", 5, true},
		{"0000000000000000000005", 5, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"-5", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"-", 0, false},
		{"5abc", 0, false},
		{"0x10", 0, false},
		{"abc", 0, false},
		{"\r\n7", 7, true},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := parseUint([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Fatalf("parseUint(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// Results checked against memcached 1.6.18.
func TestArith(t *testing.T) {
	tests := []struct {
		name      string
		value     string // "" with missing = key absent
		missing   bool
		incr      bool
		delta     uint64
		want      uint64
		wantOut   Outcome
		wantValue string
	}{
		{"incr", "1", false, true, 1, 2, Stored, "2"},
		{"incr grows", "99", false, true, 901, 1000, Stored, "1000"},
		{"decr pads", "100", false, false, 1, 99, Stored, "99 "},
		{"decr floors at zero", "5", false, false, 10, 0, Stored, "0"},
		{"incr wraps", "18446744073709551615", false, true, 2, 1, Stored, "1                   "},
		{"incr wraps to zero at 2^64", "18446744073709551615", false, true, 1, 0, Stored, "0                   "},
		{"incr past 2^63 does not wrap", "9223372036854775808", false, true, 1, 9223372036854775809, Stored, "9223372036854775809"},
		{"incr to 2^63", "9223372036854775807", false, true, 1, 9223372036854775808, Stored, "9223372036854775808"},
		{"incr by 2^63 from 2^63 wraps to zero", "9223372036854775808", false, true, 9223372036854775808, 0, Stored, "0                  "},
		{"decr from above 2^63", "9223372036854775809", false, false, 2, 9223372036854775807, Stored, "9223372036854775807"},
		{"incr keeps width", "  5 ", false, true, 1, 6, Stored, "6   "},
		{"trailing junk after space", "5 abc", false, true, 1, 6, Stored, "6    "},
		{"leading zeros", "0000000000000000000005", false, true, 1, 6, Stored, "6                     "},
		{"negative zero", "-0", false, true, 1, 1, Stored, "1 "},
		{"empty", "", false, true, 1, 0, NonNumeric, ""},
		{"letters", "abc", false, true, 1, 0, NonNumeric, "abc"},
		{"negative", "-1", false, false, 1, 0, NonNumeric, "-1"},
		{"overflow text", "18446744073709551616", false, true, 1, 0, NonNumeric, "18446744073709551616"},
		{"missing incr", "", true, true, 1, 0, NotFound, ""},
		{"missing decr", "", true, false, 1, 0, NotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestCache(t, Config{})
			var cas uint64
			if !tt.missing {
				_, cas = c.Store(Set, []byte("n"), []byte(tt.value), 9, 100, 0)
			}
			got, out := c.Arith([]byte("n"), tt.incr, tt.delta)
			if got != tt.want || out != tt.wantOut {
				t.Fatalf("arith: %d %v, want %d %v", got, out, tt.want, tt.wantOut)
			}
			if tt.missing {
				wantMiss(t, c, "n")
				return
			}
			it := wantValue(t, c, "n", tt.wantValue)
			if it.Flags != 9 || it.Exptime != t0+100 {
				t.Fatalf("flags %d exptime %d, want kept 9 and %d", it.Flags, it.Exptime, t0+100)
			}
			if (out == Stored) == (it.CAS == cas) {
				t.Fatalf("cas %d -> %d with outcome %v", cas, it.CAS, out)
			}
			checkInvariants(t, c)
		})
	}
}

func TestArithCounters(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	c.Arith([]byte("x"), true, 1)
	c.Arith([]byte("x"), false, 1)
	set(t, c, "x", "1")
	c.Arith([]byte("x"), true, 1)
	c.Arith([]byte("x"), false, 1)
	set(t, c, "y", "y")
	c.Arith([]byte("y"), true, 1)
	st := c.Stats()
	if st.IncrMisses != 1 || st.DecrMisses != 1 || st.IncrHits != 1 || st.DecrHits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestArithCAS(t *testing.T) {
	c, _ := newTestCache(t, Config{})
	_, cas := c.Store(Set, []byte("n"), []byte("10"), 0, 0, 0)
	if _, out := c.MetaArith([]byte("n"), true, 1, MetaArithOptions{CAS: cas + 100}); out != Exists {
		t.Fatalf("wrong cas: %v", out)
	}
	res, out := c.MetaArith([]byte("n"), true, 1, MetaArithOptions{CAS: cas})
	if res.Value != 11 || out != Stored || res.CAS == cas || res.CAS == 0 {
		t.Fatalf("matching cas: %+v %v", res, out)
	}
}

func TestArithNoMemory(t *testing.T) {
	// One shard that exactly holds one item of "9999" under key "n" (its record fills a size
	// class): growing to "10000" needs the next class.
	budget := exactBudget(1, 1, 4)
	c, _ := newTestCache(t, Config{MaxBytes: budget, MaxItemSize: ItemOverhead + 5, Shards: 1, DisableEvictions: true})
	set(t, c, "n", "9999")
	if _, out := c.Arith([]byte("n"), true, 1); out != NoMemory {
		t.Fatalf("incr past the budget: %v, want NoMemory", out)
	}
	wantValue(t, c, "n", "9999")
	if v, out := c.Arith([]byte("n"), false, 1); v != 9998 || out != Stored {
		t.Fatalf("decr in place: %d %v", v, out)
	}
}
