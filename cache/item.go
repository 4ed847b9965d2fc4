package cache

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// A record is one item's memory: a pointer-free byte slice holding a packed header, the key
// and the value, allocated at exactly one of the Go allocator's size classes (see sizeClass) so
// nothing is wasted beyond the class rounding and the collector never scans inside it. A shard
// keeps a pointer to each record's first byte in its slot table; the slot index is the handle
// tinylfu stores. Every byte is guarded by the owning shard's mutex.
//
//	offset  size  field
//	0       8     cas      internal cas id: unique per write, also used by flush_all
//	8       4     exptime  absolute unix seconds; 0 = never
//	12      4     atime    unix seconds of the last access (store, hit, touch)
//	16      4     flags    client flags
//	20      4     vlen     value length
//	24      2     klen     key length
//	26      1     state    stFetched, ...
//	27      klen  key
//	27+klen vlen  value
type record []byte

const (
	offCAS     = 0
	offExptime = 8
	offAtime   = 12
	offFlags   = 16
	offVlen    = 20
	offKlen    = 24
	offState   = 26
	hdrSize    = 27
)

const (
	stFetched uint8 = 1 << iota // read (or touched) since it was stored
	// Meta-protocol state (see meta.go); a store resets it with the rest of state.
	stStale     // invalidated by md/ms with I: served, but marked X
	stTokenSent // a win token (W) was handed out for this item
	stKeyBinary // stored with a base64 key (ms b): k flags return it encoded
)

var le = binary.LittleEndian

func (r record) cas() uint64         { return le.Uint64(r[offCAS:]) }
func (r record) exptime() uint32     { return le.Uint32(r[offExptime:]) }
func (r record) atime() uint32       { return le.Uint32(r[offAtime:]) }
func (r record) flags() uint32       { return le.Uint32(r[offFlags:]) }
func (r record) klen() int           { return int(le.Uint16(r[offKlen:])) }
func (r record) state() uint8        { return r[offState] }
func (r record) key() []byte         { return r[hdrSize : hdrSize+r.klen()] }
func (r record) value() []byte       { return r[hdrSize+r.klen():] }
func (r record) setCAS(v uint64)     { le.PutUint64(r[offCAS:], v) }
func (r record) setExptime(v uint32) { le.PutUint32(r[offExptime:], v) }
func (r record) setAtime(v uint32)   { le.PutUint32(r[offAtime:], v) }
func (r record) setFlags(v uint32)   { le.PutUint32(r[offFlags:], v) }
func (r record) setState(v uint8)    { r[offState] = v }

// size is what the item counts in the bytes statistic (memcached's item size).
func (r record) size() int64 { return int64(len(r)-hdrSize) + ItemOverhead }

// charge is what the record costs against the byte budget: its size class and its slot.
func (r record) charge() int64 { return int64(sizeClass(len(r))) + slotBytes }

// expired reports whether the item's exptime has been reached at now.
func (r record) expired(now int64) bool {
	e := r.exptime()
	return e != 0 && int64(e) <= now
}

// recordAt returns the record whose first byte is p, nil for nil.
func recordAt(p *byte) record {
	if p == nil {
		return nil
	}
	h := unsafe.Slice(p, hdrSize)
	return unsafe.Slice(p, hdrSize+int(le.Uint16(h[offKlen:]))+int(le.Uint32(h[offVlen:])))
}

// build returns the record holding key and the new value: value itself, or for Append and
// Prepend old's value with value added after or before it (old must hold the same key then).
// old is rewritten in place when the result has old's size class (readers only see records
// under the shard lock, so that is safe), else a new record is allocated at its size class; the
// header fields other than the lengths are the caller's to set.
func build(old record, key []byte, mode StoreMode, value []byte) record {
	var prev []byte
	if mode == Append || mode == Prepend {
		prev = old.value()
	}
	k, n := len(key), len(prev)+len(value)
	size := hdrSize + k + n
	var r record
	if old != nil && sizeClass(size) == sizeClass(len(old)) {
		r = unsafe.Slice(unsafe.SliceData(old), size)
	} else {
		r = record(make([]byte, sizeClass(size))[:size])
		copy(r[hdrSize:], key)
	}
	le.PutUint16(r[offKlen:], uint16(k))
	le.PutUint32(r[offVlen:], uint32(n))
	v := r[hdrSize+k:]
	switch mode {
	case Append:
		copy(v, prev) // in place: prev is already there
		copy(v[len(prev):], value)
	case Prepend:
		copy(v[len(value):], prev) // in place: an overlapping move to the right
		copy(v, value)
	default:
		copy(v, value)
	}
	return r
}

// maxSmall is the largest of the Go allocator's small size classes; larger allocations are
// rounded up to its 8 KiB pages.
const maxSmall = 32 << 10

// classes[(n+7)/8] is the size the Go allocator hands out for a request of n <= maxSmall bytes
// (every class is a multiple of 8). It is read from the allocator at start-up (an append's
// capacity is rounded up to the size class) rather than copied from the runtime's source.
var classes = func() []uint32 {
	t := make([]uint32, maxSmall/8+1)
	for n := 8; n <= maxSmall; {
		c := cap(slices.Grow([]byte(nil), n))
		for i := n / 8; i <= c/8 && i < len(t); i++ {
			t[i] = uint32(c)
		}
		n = c + 8
	}
	return t
}()

// sizeClass returns the number of bytes the Go allocator uses for an n-byte allocation.
func sizeClass(n int) int {
	if n <= maxSmall {
		return int(classes[(n+7)>>3])
	}
	return (n + 8191) &^ 8191
}

// Item is a read-only view of a live item handed to an Appender while the shard lock is held.
// Key and Value alias cache memory: they must not be retained or modified after AppendItem
// returns (copy them instead).
type Item struct {
	Key, Value []byte
	Flags      uint32
	CAS        uint64 // 0 when the cache runs with DisableCAS
	Exptime    int64  // absolute unix seconds, 0 = never
	LastAccess int64  // unix seconds of the previous access
	Fetched    bool   // fetched before this access

	// Meta-protocol state (see meta.go): Stale is the item invalidated (X), Win that this access
	// won the recache token (W; set by MetaGet only), WinSentBefore that a token had already been
	// handed out (Z), Created that the access vivified the item (MetaGet only), KeyBinary that it
	// was stored with a base64 key. Now is the cache time of the access, for relative TTLs.
	Stale, Win, WinSentBefore bool
	Created, KeyBinary        bool
	Now                       int64
}

// Appender serializes a hit. AppendItem appends whatever the caller needs from it to dst and
// returns the extended slice. It runs under a shard lock: it must be quick, must not call back
// into the cache, and must not retain its slices.
type Appender interface {
	AppendItem(dst []byte, it Item) []byte
}
