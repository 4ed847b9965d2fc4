// Package cache is tandem's storage engine: a sharded, byte-bounded key-value cache with
// memcached 1.6.18 semantics (storage modes, cas ids, exptime rules, flush_all, incr/decr,
// stats counters) and TinyLFU admission and eviction from github.com/dgryski/go-tinylfu.
//
// What it owns: items, their bytes, expiry and the memory budget. What it does not: the
// protocol (operations return Outcome values; the caller turns them into reply text), the
// network, logging, the clock's refreshing and goroutines: it starts none, and background work
// (Maintain) runs when its owner calls it.
//
// # Concepts
//
// What a maintainer needs to hold in mind, and what each owns (12; the files in brackets):
//
//  1. Cache: the shards, the cas counter, the flush state and the memory limit (cache.go, flush.go).
//  2. shard: one lock and everything below for the keys whose hash it owns, and its byte budget
//     (shard.go).
//  3. record: an item's header, key and value in one chunk; immutable but for its header
//     (item.go).
//  4. slab class and page: a page is cut into chunks of its class; a record too large for a
//     chunk is a page of its own, a large record (slab.go).
//  5. page memory: where a page comes from: a piece of the memory file, else a mapping of its
//     own, else (below a kernel page, or when the kernel refuses a mapping) the heap. Race
//     builds take the same path (pagemem.go, reserve_*.go).
//  6. index: key hash to chunk handle, with a real remove (index.go).
//  7. window: a CLOCK queue of new records in front of the main space (policy.go).
//  8. main space: go-tinylfu, admission and eviction by frequency, with a retry for its
//     doorkeeper (TestTinyLFUDoorkeeper pins the behaviour the retry works around); as
//     go-tinylfu cannot resize, it is rebuilt at the capacity that fills its share of the budget,
//     making its room first (policy.go: resizeMainLocked).
//  9. size filter: records larger than the mean reach the main space only by chance, small new
//     ones get a second lap in the window (worthOfferLocked, storedLocked).
//  10. page hand: releases empty pages, moves a page's records into free chunks elsewhere, and
//     as a last resort evicts a page with its items (makeRoomLocked, freePageLocked).
//  11. expiry and sweep: whole-second expiry and flush_all checked on access, and a bounded
//     sweep when the owner calls Maintain (scan.go).
//  12. memory file: items that survive a graceful restart (restart.go).
//
// # Exits
//
// An item leaves through one function, killLocked (out of the index and the window, its chunk
// freed); dropLocked wraps it for the drops nobody asked for, counting each as an eviction or a
// reclaim and calling OnEvict. The callers: Delete and a delete's cas match (meta.go); a store
// whose new record does not fit the old chunk (a Set frees it first, the other modes and incr
// once the new record is written), an expired store, a too-large Set (store.go); an access that
// finds an expired or flushed record (findLocked); an immediate flush_all (flush.go); Maintain's
// sweep and a store's purge with evictions disabled (dropLocked); the policy: the window's tail
// turned down by the size filter or by go-tinylfu, itself or its victim (evictLocked, onEvict);
// the page hand evicting a page (freePageLocked); and a warm restart, which links the saved
// records and kills the expired and flushed ones (restoreRecordLocked). linkLocked and killLocked
// count what they link and kill, and the tests check after each exit that the live records are
// exactly the difference (checkInvariants, TestEveryExitKills).
//
// Which mechanism makes room, in the order makeRoomLocked tries them: an empty page; a page
// whose records all move elsewhere (nothing is evicted); the policy, one item at a time (the
// size filter first, then go-tinylfu's choice between the window's candidate and its victim);
// and only when the policy has evicted two pages' worth without freeing a usable chunk or page,
// or has nothing to evict, the page under the page hand with its items.
//
// # Layout
//
// Keys are hashed with hash/maphash; the high bits of the hash pick a shard, each with one
// sync.Mutex and everything below. An item is one record: a 27-byte header (cas, exptime, last
// access, flags, lengths, state), the key and the value (item.go; with Config.LargeClientFlags
// also 4 bytes after the value, the high half of 64-bit client flags), in a chunk of one of the
// shard's slab pages (slab.go): slab classes in steps of 1/32 (8 bytes up to 256), a page a
// memory mapping outside the Go heap (pagemem.go) cut into chunks of its class, a record larger
// than the shard's largest chunk a heap buffer of its own. The shard's index (index.go, tandem's
// own) maps the hash to the chunk's handle (page << 16 | chunk) in 8-byte open-addressing slots
// and compares the stored key. Deleting, expiring or evicting an item returns its chunk to its
// class's free list at once, which the next record of that class (or of a class up to a quarter
// smaller) takes, so churn makes no garbage.
//
// What an item with a 10-byte key and a 100-byte value costs (bytes; the tinylfu figures are
// measured at start-up, see policy.go):
//
//	                                 before #24     window item   main item
//	key + value                      110            110           110
//	header                            27             27            27
//	chunk rounding                     7              7             7  (144-B chunk)
//	index                             (tinylfu)       9-14          9-14
//	window queue                       -              4-8           -
//	tinylfu entry                     64              -            80  (56 live, 24 garbage per Add)
//	tinylfu map, sketch, doorkeeper   50-100          -            52  (per slot of capacity)
//	total                             255-310       157-166       285-290
//
// # Policy
//
// A new item enters its shard's window, a CLOCK queue (a hit sets a reference bit; the queue's
// tail gets a second chance for it). The main space is a go-tinylfu (github.com/dgryski/go-tinylfu,
// used through its public API only) whose capacity is an item count sized to hold all but
// WindowPercent (default 60) of the shard's bytes. Room is made in one way: the window's tail is
// offered to the main space, and once that is full every offer makes go-tinylfu drop exactly one
// entry, the newcomer or its own victim (OnEvict): a window item needs no tinylfu entry until it
// is offered, so the window's items are the cheap ones. Every lookup counts in go-tinylfu's
// frequency sketch, window items' too, so an offered item competes with its real history; as
// go-tinylfu's doorkeeper turns down every key the first time it is a candidate, an item read
// since it was stored is offered once more when that happens. A record larger than the shard's
// mean chunk is offered only with probability (mean/size)^4, else evicted (worthOfferLocked): a
// byte holds more hits in small items; for the same reason a new record of at most 3/4 of the mean
// gets a second lap in the window (storedLocked). A declined item is dropped (counted in evictions) and a
// later Get misses; Store still returned Stored, as memcached accepts a set whose item is
// evicted right away. Peek and Walk read records without an access.
//
// # Memory bound
//
// Everything is charged against Config.MaxBytes (-m), each shard holding at most MaxBytes/N: its
// pages as allocated, its index and window queue as allocated, and its tinylfu at full capacity
// as measured (mainBytes: what New allocates for that capacity, plus capacity times what one
// entry allocates; nothing models another library's layout). The bytes statistic still counts
// key + value + 48 per item, as memcached's does. Used is exactly that sum, pages counted as their source
// gives them (checkMemory in the tests, after every store), and a shard is never over its
// budget, not even in the middle of a store: a new page leaves room for the index and the window
// queue to grow, and a larger main space makes its room before it is built. Not charged: the
// shard's own small tables (page table, slab classes, retry list; a few KB per shard). A record that finds no free chunk takes one
// from its class's page being carved, or a new page while the budget has room; else a free chunk
// up to a quarter larger; else a page without live records is released, or a page whose records
// all fit into free chunks of their class elsewhere (they move: tandem owns the index, so a move
// is a slot update); else the policy evicts (above). Only when the policy has evicted two pages'
// worth without freeing a usable chunk or page, or has nothing to evict, does the page under the
// page hand go with its items (memcached's slab rebalancing; counted in ByteEvictions). With
// DisableEvictions only expired items and empty pages go, and the store fails with NoMemory. The
// main space's capacity follows the live items' mean chunk size: every quarter capacity in
// stores it is rebuilt at its share when that moved by an eighth (growing only a full one, and
// making room through the policy), or to drop stale entries (a deleted main item's entry stays
// in go-tinylfu, which has no Remove, until evicted) once they are a quarter of it.
//
// # Time and expiry
//
// Expiry and flush_all use whole unix seconds from Config.Clock (tests inject a fake clock and
// never sleep). An access that finds an expired item reclaims it, so does a store that needs
// room and finds one in its class; Maintain sweeps a bounded number of chunks per call, as
// memcached's LRU crawler does, so expired items go without traffic.
//
// # Memory file
//
// With Config.MemoryFile (memcached's -e) every page and large record is a piece of one shared
// file mapping, each shard owning a region of twice its budget (pagemem.go), and a key's shard is
// picked by a seeded xxhash whose seed the file keeps (maphash's values differ between
// processes). Records never point at each other and a handle is a page and a chunk number, so
// the pages mean the same to the next process given each shard's page table: SaveRestart writes
// the tables, a checksum per page and the cas counter, flush state and layout settings to
// MemoryFile.meta at a graceful stop; New reads and deletes it and rebuilds the index, the window
// and the main space (with its saved capacity, but empty frequency counters: go-tinylfu cannot
// save them) from the live records, dropping expired and flushed ones, or starts cold, saying why
// in Restart (restart.go).
//
// # Locks and bytes
//
// Lock order: the FlushAll and Maintain mutexes are taken before a shard lock, never while one
// is held; no code holds two shard locks but SaveRestart, which takes them all in shard order
// once the Cache is no longer used. Stats, ShardStats, Walk, FlushAll and Maintain take
// the shard locks one at a time. The cache copies every key and value it stores, so callers may
// reuse their buffers; the Item views it hands out alias its memory (see Item and Appender).
//
// # Differences from memcached
//
//   - A Set whose new value fits the old chunk rewrites it in place and needs no room;
//     memcached allocates the whole new item first. An add on a live key with memory full is
//     NotStored here, SERVER_ERROR out of memory there.
//   - flush_all is exact to the cas id for immediate flushes even with DisableCAS (every write
//     still gets a unique internal id; -C only hides it and makes every cas command Exists),
//     and a flush already in effect is not undone by a later delayed flush_all. A flush_all with
//     an absolute time in the past flushes at once (memcached ignores times before its start).
//   - An immediate flush_all frees the flushed items right away, which memcached's LRU crawler
//     does shortly after.
//   - -m covers the index and the policy's memory too (memcached's hash table is outside -m),
//     so the cache's memory stays below -m.
package cache
