package cache

// item is one cache entry. Live items are linked in their shard's list and indexed by its tinylfu;
// a tombstone (deleted, expired or evicted for bytes) stays in the tinylfu index, unlinked and
// without a buffer, so tinylfu keeps its frequency history until it evicts the entry itself.
// Every field is guarded by the owning shard's mutex. The struct is kept at 64 bytes.
type item struct {
	prev, next *item  // shard list links; nil when not linked
	buf        []byte // key followed by value; nil for tombstones
	cas        uint64 // internal cas id: unique per write, also used by flush_all
	exptime    uint32 // absolute unix seconds; 0 = never
	atime      uint32 // unix seconds of the last access (store, hit, touch)
	flags      uint32 // client flags
	klen       uint16 // key length: buf[:klen] is the key
	state      uint8  // stLive, stFetched, ...
}

const (
	stLive    uint8 = 1 << iota // linked and counted in bytes; else a tombstone or dropped
	stFetched                   // read (or touched) since it was stored
	// Meta-protocol state (see meta.go); a store resets it with the rest of state.
	stStale     // invalidated by md/ms with I: served, but marked X
	stTokenSent // a win token (W) was handed out for this item
	stKeyBinary // stored with a base64 key (ms b): k flags return it encoded
)

func (it *item) key() []byte   { return it.buf[:it.klen] }
func (it *item) value() []byte { return it.buf[it.klen:] }
func (it *item) live() bool    { return it.state&stLive != 0 }

// cost is what the item charges against the byte budget.
func (it *item) cost() int64 { return int64(len(it.buf)) + ItemOverhead }

// expired reports whether the item's exptime has been reached at now.
func (it *item) expired(now int64) bool {
	return it.exptime != 0 && int64(it.exptime) <= now
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

	// Meta-protocol state, set by MetaGet only (see meta.go): Stale is the item invalidated (X),
	// Win that this access won the recache token (W), WinSentBefore that a token had already been
	// handed out (Z), Created that the access vivified the item, KeyBinary that it was stored
	// with a base64 key. Now is the cache time of the access, for relative TTLs.
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

// fill makes it.buf hold key followed by the new value: value itself, or for Append and
// Prepend the current value with value added after or before it (those modes require it to hold
// the same key already). The buffer is reused in place when it is large enough and not wastefully
// so, which keeps -m close to real memory use and makes overwrites allocation-free. Readers only
// see buffers under the shard lock, so rewriting in place is safe. The caller accounts the size.
func (it *item) fill(key []byte, mode StoreMode, value []byte) {
	k := len(key)
	var old []byte
	if mode == Append || mode == Prepend {
		old = it.value()
	}
	size := k + len(old) + len(value)
	if cap(it.buf) >= size && cap(it.buf) <= 2*size+64 {
		buf := it.buf[:size]
		switch mode {
		case Append:
			copy(buf[k+len(old):], value)
		case Prepend:
			copy(buf[k+len(value):], old) // overlapping move to the right
			copy(buf[k:], value)
		default:
			copy(buf[k:], value)
		}
		copy(buf, key)
		it.buf = buf
	} else {
		buf := make([]byte, size)
		copy(buf, key)
		switch mode {
		case Append:
			copy(buf[k+copy(buf[k:], old):], value)
		case Prepend:
			copy(buf[k+copy(buf[k:], value):], old)
		default:
			copy(buf[k:], value)
		}
		it.buf = buf
	}
	it.klen = uint16(k)
}
