package cache

import "encoding/binary"

// A record is one item's memory: a packed header, the key and the value, in a chunk of one of
// its shard's slab pages (slab.go). A record slice's length is the record's, its capacity the
// chunk's. Every byte is guarded by the owning shard's mutex.
type record []byte

// Offsets of the header fields, all little-endian.
const (
	offCAS     = 0  // 8 bytes: internal cas id, unique per write, also used by flush_all
	offExptime = 8  // 4: absolute unix seconds; 0 = never
	offAtime   = 12 // 4: unix seconds of the last access (see touchLocked)
	offFlags   = 16 // 4: client flags (their low 32 bits with Config.LargeClientFlags)
	offVlen    = 20 // 4: value length
	offKlen    = 24 // 2: key length
	offState   = 26 // 1: stLive, stFetched, ...
	hdrSize    = 27 // the key follows, then the value
)

// flagsTail is what a record of a Cache with Config.LargeClientFlags adds after its value: the
// high 32 bits of its client flags, little-endian, outside the record's length (in its chunk's
// capacity), so the header and every item of a Cache without the option stay as they are.
const flagsTail = 4

const (
	stFetched uint8 = 1 << iota // read (or touched) since it was stored
	// Meta-protocol state (see meta.go); a store resets it with the rest of state.
	stStale     // invalidated by md/ms with I: served, but marked X
	stTokenSent // a win token (W) was handed out for this item
	stKeyBinary // stored with a base64 key (ms b): k flags return it encoded
	stLive      // the chunk holds a live record (setState sets it; a free chunk has state 0)
	// Policy state (policy.go), kept by setState.
	stMain  // in the main space (else in the window)
	stRef   // hit while in the window since it was last queued
	stRetry // offered to the main space again after go-tinylfu first dropped it
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
func (r record) setState(v uint8)    { r[offState] = v | stLive | r[offState]&stMain }

// size is what the item counts in the bytes statistic (memcached's item size).
func (r record) size() int64 { return int64(len(r)-hdrSize) + ItemOverhead }

// expired reports whether the item's exptime has been reached at now.
func (r record) expired(now int64) bool {
	e := r.exptime()
	return e != 0 && int64(e) <= now
}

// build writes key and the new value into dst, a chunk's first bytes, and returns the record:
// value itself, or for Append and Prepend old's value with value added after or before it (old
// must hold the same key then). dst may be old's own chunk, rewritten in place (readers only see
// records under the shard lock, so that is safe). The header fields other than the lengths are
// the caller's to set.
func build(dst []byte, old record, key []byte, mode StoreMode, value []byte) record {
	var prev []byte
	if mode == Append || mode == Prepend {
		prev = old.value()
	}
	k, n := len(key), len(prev)+len(value)
	r := record(dst[:hdrSize+k+n])
	if len(old) == 0 || &r[0] != &old[0] { // not rewritten in place
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

// Item is a read-only view of a live item handed to an Appender or a Walk callback while the
// shard lock is held. Key and Value alias a record that a later store may rewrite in place: they
// must not be retained or modified after the call returns (copy them instead).
type Item struct {
	Key, Value []byte
	Flags      uint64 // client flags; above 32 bits only with Config.LargeClientFlags
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
