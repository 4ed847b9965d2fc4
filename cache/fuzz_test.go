package cache

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// FuzzCacheModel reads its input as a program of operations on a few keys and checks every
// reply against a plain map model of memcached semantics. The cache is large enough that it
// never evicts or declines to admit, so the model needs no policy. Each program runs twice: in
// memory, and with a memory file, where some clock steps are also a graceful stop and a warm
// restart that the model must not notice.
func FuzzCacheModel(f *testing.F) {
	f.Add([]byte("\x00\x00\x01\x06\x00\x00"))
	f.Add([]byte("\x00\x01\x05\x03\x01\x00\x06\x01\x00\x04\x01\x02\x06\x01\x00"))
	f.Add([]byte("\x00\x02\x02\x0a\x02\x03\x0a\x02\x10\x06\x02\x00"))
	f.Add([]byte("\x00\x00\x00\x0b\x00\x00\x06\x00\x00\x0b\x01\x03\x06\x00\x00"))
	f.Add([]byte("\x00\x00\x00\x05\x00\x01\x06\x00\x00"))             // cas 0 on a live item
	f.Add([]byte("\x00\x01\x22\x0a\x01\x06\x06\x01\x00\x0a\x01\x08")) // incr on " 5 ", "-1"
	f.Add([]byte("\x00\x00\x80\x06\x00\x00"))                         // exptime of exactly 30 days is relative
	f.Add([]byte("\x00\x00\x0a\x0a\x00\x0a\x06\x00\x00"))             // incr 2^63-1 by 1e16
	f.Add([]byte("\x00\x00\x0b\x0a\x00\x02\x06\x00\x00"))             // incr 2^63 by 4e14
	f.Fuzz(func(t *testing.T, prog []byte) {
		runModel(t, prog, "")
		runModel(t, prog, memFilePath(t))
	})
}

var (
	modelKeys   = []string{"a", "b", "c", "long-key-d"}
	modelValues = []string{"", "0", "1", "99", "100", "18446744073709551615", " 5 ", "abc", "-1", "x y",
		"9223372036854775807", "9223372036854775808"} // 2^63 - 1 and 2^63: incr crosses 2^63 without wrapping
	modelExps   = []int64{0, 0, -1, 1, 2, 5, 3 /*+now*/, 30*24*3600 + 1, 30 * 24 * 3600}
	modelDelays = []int64{0, -1, 1, 2, 3, 4 /*+now*/}
)

const (
	modelMaxItem = 120
	modelBig     = 200 // a value length that is always TooLarge
)

type modelItem struct {
	value   []byte
	flags   uint64
	cas     uint64
	exp     int64
	atime   int64
	fetched bool
}

type model struct {
	m        map[string]*modelItem
	now      int64
	pastF    int64 // largest flush time already in effect (0 = none)
	pendingF int64 // flush time not yet in effect (0 = none)
	lastCAS  uint64
}

// visible returns the live model item for k, dropping it if expired or flushed.
// fetch records a read access as memcached does: the first marks the item
// fetched, later ones also make now its last access.
func (m *model) fetch(it *modelItem) {
	if it.fetched {
		it.atime = m.now
	}
	it.fetched = true
}

func (m *model) visible(k string) *modelItem {
	it := m.m[k]
	if it == nil {
		return nil
	}
	if m.pendingF != 0 && m.pendingF <= m.now {
		m.pastF = max(m.pastF, m.pendingF)
		m.pendingF = 0
	}
	if (it.exp != 0 && it.exp <= m.now) || it.atime <= m.pastF {
		delete(m.m, k)
		return nil
	}
	return it
}

func (m *model) flush(delay int64) {
	at := m.now
	switch {
	case delay > 30*24*3600:
		at = delay // an absolute unix time
	case delay > 0:
		at = m.now + delay
	}
	f := at - 1 // memcached 1.6.18: oldest_live = realtime(delay) - 1
	if m.pendingF != 0 && m.pendingF <= m.now {
		m.pastF = max(m.pastF, m.pendingF) // in effect: stays in effect
	}
	m.pendingF = 0
	if f <= m.now {
		clear(m.m) // every existing item predates the flush's cas id
		m.pastF = max(m.pastF, f)
	} else {
		m.pendingF = f
	}
}

func runModel(t *testing.T, prog []byte, memoryFile string) {
	clk := newFakeClock()
	cfg := Config{MaxBytes: 1 << 16, MaxItemSize: modelMaxItem, Shards: 2, Clock: clk, MemoryFile: memoryFile}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if memoryFile != "" {
		defer func() { closeMemFile(c.file) }()
	}
	m := &model{m: map[string]*modelItem{}, now: clk.Now()}
	next := func() byte {
		if len(prog) == 0 {
			return 0
		}
		b := prog[0]
		prog = prog[1:]
		return b
	}
	checkCAS := func(step int, cas uint64) {
		if cas <= m.lastCAS {
			t.Fatalf("step %d: cas %d not above the previous %d", step, cas, m.lastCAS)
		}
		m.lastCAS = cas
	}
	for step := 0; len(prog) > 0; step++ {
		checkMemory(t, c) // after every operation, stores above all
		op, kb, arg := next(), next(), next()
		k := modelKeys[int(kb)%len(modelKeys)]
		key := []byte(k)
		val := []byte(modelValues[int(arg)%len(modelValues)])
		if arg >= 240 {
			val = bytes.Repeat([]byte{'v'}, int(arg-240)*8) // up to 120 bytes: appends overflow
		}
		if arg == 239 {
			val = make([]byte, modelBig)
		}
		exp := modelExps[int(arg>>4)%len(modelExps)]
		if exp == 3 {
			exp += m.now // absolute
		}
		flags := uint64(uint32(arg))
		where := func() string { return "step " + strconv.Itoa(step) + " op " + strconv.Itoa(int(op%12)) + " key " + k }
		switch op % 12 {
		case 0, 1, 2, 3, 4, 5: // storage
			mode := StoreMode(op % 12)
			old := m.visible(k)
			var cas uint64
			if mode == CAS {
				switch {
				case old != nil && arg%4 == 0:
					cas = old.cas
				case arg%4 == 1:
					cas = 0 // never a wildcard: a live item's cas id is never 0
				default:
					cas = 12345678
				}
			}
			got, gotCAS := c.Store(mode, key, val, flags, exp, cas)
			want, item := modelStore(m, mode, k, old, val, flags, exp, cas)
			if got != want {
				t.Fatalf("%s: %v %q: got %v, want %v", where(), mode, val, got, want)
			}
			if got == Stored {
				checkCAS(step, gotCAS)
				if item != nil {
					item.cas = gotCAS
				}
			} else if gotCAS != 0 {
				t.Fatalf("%s: %v returned cas %d", where(), got, gotCAS)
			}
		case 6, 7: // get, gat
			opt := GetOptions{Touch: op%12 == 7, Exptime: exp}
			var a capture
			dst, ok := c.Get([]byte("x"), key, opt, &a)
			it := m.visible(k)
			if ok != (it != nil) {
				t.Fatalf("%s: get hit=%v, model has %v", where(), ok, it != nil)
			}
			if !ok {
				if string(dst) != "x" {
					t.Fatalf("%s: miss changed dst to %q", where(), dst)
				}
				break
			}
			if opt.Touch {
				it.exp = modelExptime(exp, m.now)
			}
			want := Item{Key: key, Value: it.value, Flags: it.flags, CAS: it.cas, Exptime: it.exp, LastAccess: it.atime, Fetched: it.fetched}
			if !itemEqual(a.it, want) || string(dst) != "x"+string(it.value) {
				t.Fatalf("%s: get\n got %+v\nwant %+v", where(), a.it, want)
			}
			m.fetch(it)
		case 8:
			got, it := c.Delete(key), m.visible(k)
			want := NotFound
			if it != nil {
				want = Deleted
				delete(m.m, k)
			}
			if got != want {
				t.Fatalf("%s: delete %v, want %v", where(), got, want)
			}
		case 9:
			got, it := c.Touch(key, exp), m.visible(k)
			want := NotFound
			if it != nil {
				want = Touched
				it.exp = modelExptime(exp, m.now)
				m.fetch(it)
			}
			if got != want {
				t.Fatalf("%s: touch %v, want %v", where(), got, want)
			}
		case 10:
			incr, delta := arg%2 == 0, uint64(arg)*uint64(arg)*1e14
			res, got := c.MetaArith(key, incr, delta, MetaArithOptions{})
			v, cas := res.Value, res.CAS
			wantV, want := modelArith(m, k, incr, delta)
			if got != want || v != wantV {
				t.Fatalf("%s: arith incr=%v %d: got %d %v, want %d %v", where(), incr, delta, v, got, wantV, want)
			}
			if got == Stored {
				checkCAS(step, cas)
				m.m[k].cas = cas
			}
		case 11:
			if arg%3 == 0 {
				d := modelDelays[int(arg/3)%len(modelDelays)]
				if d == 4 {
					d += m.now
				}
				c.FlushAll(d)
				m.flush(d)
			} else {
				clk.Advance(int64(arg % 4))
				m.now = clk.Now()
			}
			if memoryFile != "" && arg%3 == 2 {
				live := c.Stats().CurrItems
				if _, err := c.SaveRestart(); err != nil {
					t.Fatalf("%s: save: %v", where(), err)
				}
				closeMemFile(c.file)
				if c, err = New(cfg); err != nil {
					t.Fatalf("%s: restart: %v", where(), err)
				}
				if r := c.Restart(); !r.Warm || uint64(r.Items+r.Dropped) != live {
					t.Fatalf("%s: restart %+v, %d items live before", where(), r, live)
				}
			}
		}
	}
	checkInvariants(t, c)
	for _, k := range modelKeys {
		_, ok := get(c, k)
		if it := m.visible(k); ok != (it != nil) {
			t.Fatalf("final: %s hit=%v, model %v", k, ok, it != nil)
		}
	}
}

// modelStore applies a storage command to the model and returns the expected outcome and the
// model item that received a new cas id (nil if none).
func modelStore(m *model, mode StoreMode, k string, old *modelItem, val []byte, flags uint64, exp int64, cas uint64) (Outcome, *modelItem) {
	size := len(k) + len(val) + ItemOverhead
	if size > modelMaxItem {
		if mode == Set {
			delete(m.m, k)
		}
		return TooLarge, nil
	}
	switch mode {
	case Add:
		if old != nil {
			return NotStored, nil
		}
	case Replace, Append, Prepend:
		if old == nil {
			return NotStored, nil
		}
	case CAS:
		if old == nil {
			return NotFound, nil
		}
		if old.cas != cas {
			return Exists, nil
		}
	}
	it := &modelItem{value: bytes.Clone(val), flags: flags, exp: modelExptime(exp, m.now), atime: m.now}
	switch mode {
	case Append, Prepend:
		if size+len(old.value) > modelMaxItem {
			return NotStored, nil
		}
		it.flags, it.exp = old.flags, old.exp
		if mode == Append {
			it.value = append(bytes.Clone(old.value), val...)
		} else {
			it.value = append(bytes.Clone(val), old.value...)
		}
	}
	if it.exp != 0 && it.exp <= m.now {
		delete(m.m, k)
		return Stored, nil
	}
	m.m[k] = it
	return Stored, it
}

func modelArith(m *model, k string, incr bool, delta uint64) (uint64, Outcome) {
	it := m.visible(k)
	if it == nil {
		return 0, NotFound
	}
	n, ok := modelParseUint(it.value)
	if !ok {
		return 0, NonNumeric
	}
	if incr {
		n += delta
	} else if delta > n {
		n = 0
	} else {
		n -= delta
	}
	s := strconv.FormatUint(n, 10)
	if len(s) < len(it.value) {
		s += string(bytes.Repeat([]byte{' '}, len(it.value)-len(s)))
	}
	it.value = []byte(s)
	it.atime = m.now
	return n, Stored
}

// modelExptime is memcached's exptime rule written out independently of exptime32:
// 0 never expires; a negative exptime is already expired (tandem stores 1, a time always in the
// past); up to 30 days it is relative to now; beyond that an absolute unix time.
func modelExptime(exp, now int64) int64 {
	switch {
	case exp == 0:
		return 0
	case exp < 0:
		return 1
	case exp > 30*24*3600:
		return exp
	}
	return now + exp
}

// modelParseUint is memcached's safe_strtoull, independently of parseUint: strtoull (leading
// white space, an optional sign, decimal digits; a minus sign negates modulo 2^64; out of range
// fails), then the number must be followed by the end of the value, white space or NUL, and a
// minus sign is refused when the result is negative as a signed 64-bit number.
func modelParseUint(b []byte) (uint64, bool) {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	end := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(s)
	}
	n, err := strconv.ParseUint(s[:end], 10, 64)
	if err != nil {
		return 0, false // no digits, or out of range
	}
	if rest := s[end:]; rest != "" && !strings.ContainsRune(" \t\n\v\f\r\x00", rune(rest[0])) {
		return 0, false
	}
	if neg {
		n = -n
		if int64(n) < 0 {
			return 0, false
		}
	}
	return n, true
}

func itemEqual(a, b Item) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) && a.Flags == b.Flags && a.CAS == b.CAS &&
		a.Exptime == b.Exptime && a.LastAccess == b.LastAccess && a.Fetched == b.Fetched
}
