package handler

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
)

// Per-prefix stats ("stats detail on|off|dump", memcached -D), as memcached
// 1.6.18 keeps them in stats_prefix.c: a key's prefix is its bytes before
// the first delimiter (a key without one is not counted); gets and hits
// are counted per key looked up by get, gets, gat, gats and the
// binary get and touch commands, sets per storage command whose line was
// valid (also when its value is then refused), deletes per delete whose line
// was valid. Meta commands, incr, decr and touch are not counted. The dump
// lists prefixes in memcached's order: by bucket of a 256-bucket table
// hashed with MurmurHash3 (memcached's default hash), newest first within a
// bucket.

// prefixBuckets is memcached's PREFIX_HASH_SIZE.
const prefixBuckets = 256

// maxPrefixes bounds the prefixes remembered: memcached keeps every prefix a
// client sends while detail is on; tandem stops adding new ones past this
// many, so that a client cannot grow the table without bound.
const maxPrefixes = 100_000

// prefixCounts is one prefix's counters.
type prefixCounts struct {
	prefix                 string
	gets, hits, sets, dels uint64
	next                   *prefixCounts
}

// prefixStats is the per-prefix table. Safe for concurrent use.
type prefixStats struct {
	enabled atomic.Bool
	delim   byte

	mu      sync.Mutex
	buckets [prefixBuckets]*prefixCounts // guarded by mu
	n       int                          // guarded by mu
}

func (p *prefixStats) init(delim byte, enabled bool) {
	p.delim = delim
	p.enabled.Store(enabled)
}

// on reports whether per-prefix stats are being collected; callers check it
// before building anything to record.
func (p *prefixStats) on() bool { return p.enabled.Load() }

// findLocked returns the counters of key's prefix, creating them, or nil
// when the key has no delimiter or the table is full. Like memcached it
// matches an existing prefix of the bucket that merely starts with the
// key's prefix (its strncmp over the key prefix's length).
func (p *prefixStats) findLocked(key []byte) *prefixCounts {
	n := 0
	for n < len(key) && key[n] != 0 && key[n] != p.delim {
		n++
	}
	if n == len(key) || key[n] != p.delim {
		return nil
	}
	prefix := key[:n]
	b := murmur3(prefix) % prefixBuckets
	for pc := p.buckets[b]; pc != nil; pc = pc.next {
		if len(pc.prefix) >= n && pc.prefix[:n] == string(prefix) {
			return pc
		}
	}
	if p.n >= maxPrefixes {
		return nil
	}
	pc := &prefixCounts{prefix: string(prefix), next: p.buckets[b]}
	p.buckets[b] = pc
	p.n++
	return pc
}

// recordGet counts a get of key, a hit or not.
func (p *prefixStats) recordGet(key []byte, hit bool) {
	p.mu.Lock()
	if pc := p.findLocked(key); pc != nil {
		pc.gets++
		if hit {
			pc.hits++
		}
	}
	p.mu.Unlock()
}

// recordSet counts a storage command on key.
func (p *prefixStats) recordSet(key []byte) {
	p.mu.Lock()
	if pc := p.findLocked(key); pc != nil {
		pc.sets++
	}
	p.mu.Unlock()
}

// recordDelete counts a delete of key.
func (p *prefixStats) recordDelete(key []byte) {
	p.mu.Lock()
	if pc := p.findLocked(key); pc != nil {
		pc.dels++
	}
	p.mu.Unlock()
}

// reset forgets every prefix ("stats reset").
func (p *prefixStats) reset() {
	p.mu.Lock()
	p.buckets = [prefixBuckets]*prefixCounts{}
	p.n = 0
	p.mu.Unlock()
}

// appendDump appends memcached's "stats detail dump" lines (without END).
func (p *prefixStats) appendDump(out []byte) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.buckets {
		for ; pc != nil; pc = pc.next {
			out = append(out, "PREFIX "...)
			out = append(out, pc.prefix...)
			out = strconv.AppendUint(append(out, " get "...), pc.gets, 10)
			out = strconv.AppendUint(append(out, " hit "...), pc.hits, 10)
			out = strconv.AppendUint(append(out, " set "...), pc.sets, 10)
			out = strconv.AppendUint(append(out, " del "...), pc.dels, 10)
			out = append(out, "\r\n"...)
		}
	}
	return out
}

// murmur3 is MurmurHash3_x86_32 with seed 0, memcached's default hash.
func murmur3(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(data)
	for ; len(data) >= 4; data = data[4:] {
		k := binary.LittleEndian.Uint32(data)
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch len(data) {
	case 3:
		k ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}
