// Package cache is tandem's storage engine: a sharded, byte-bounded key-value cache with
// memcached 1.6.18 semantics (storage modes, cas ids, exptime rules, flush_all, incr/decr,
// stats counters) and TinyLFU admission and eviction from github.com/dgryski/go-tinylfu.
//
// What it owns: items, their bytes, expiry and the memory budget. What it does not: the
// protocol (operations return Outcome values; the caller turns them into reply text), the
// network, logging, the clock's refreshing and goroutines: it starts none, and background work
// (Maintain) runs when its owner calls it.
//
// # Layout
//
// Keys are hashed with hash/maphash; the high bits of the hash pick a shard, each with one
// sync.Mutex, its slab pages and a tinylfu.T[uint64, uint32]. An item is one record: a 27-byte
// header (cas, exptime, last access, flags, lengths, state), the key and the value (item.go), in a
// chunk of one of the shard's slab pages (slab.go): one slab class per Go allocator size class, a
// page a memory mapping outside the Go heap (pagemem.go) cut into chunks of its class, a record
// larger than a quarter page a heap buffer of its own. tinylfu maps the key's hash to the chunk's
// handle (page << 16 | chunk), so it is the index and the policy at once, and there is no other
// table, list or map. A lookup compares the stored key (a different key with the same 64-bit hash
// replaces the old one). Deleting, expiring or evicting an item returns its chunk to its class's
// free list at once, which the next record of that class takes, so churn makes no garbage; its
// tinylfu entry (the library has no Remove) stays behind, stale, until tinylfu evicts it or a
// rebuild drops it (policy.go).
//
// What each byte of an item with a 10-byte key and a 100-byte value costs in memory: before
// issue #18 (item struct, separate buffer), the first rebuild (one record allocation per item
// behind a slot table) and this layout (slab chunks):
//
//	                               before     records    slab chunks
//	key + value bytes              110        110        110
//	header                          64 (item)  27         27
//	size-class rounding              2          7          7  (144-B chunk)
//	slot table pointer               -          8          -
//	tinylfu list element + entry    64         75         64  (two 32-B objects)
//	tinylfu map, sketch, doorkeeper 35-70      39-78      50-100 per capacity / fill (52 at 1M)
//	pages' free and uncarved chunks  -          -         ~3%
//	total (heap; now heap + pages) ~300       266-305    ~255-310 (1M items: 289 -> 272 B)
//
// # Memory bound
//
// Everything above is charged against Config.MaxBytes (-m), each shard holding at most
// MaxBytes/N: its pages as allocated and its index as built, every entry of its capacity
// included (indexCharge, checked against runtime.MemStats by a test). So the memory of the
// cache stays below -m whatever the item sizes; the bytes statistic still counts key + value +
// 48 per item, as memcached's does. A record that finds no free chunk of its class takes one
// from the class's page being carved, or a new page while the budget has room; else a page of
// another class without live records is released, else an expired item or the least recently
// accessed of 8 items of the class is evicted (memcached's per-class LRU tail), and a class
// without items, or one that has evicted a page's worth, takes the page of an older item of
// another class (memcached's slab rebalancing). With DisableEvictions only expired items and
// empty pages go, and the store fails with NoMemory. tinylfu's capacity is an item count: each
// shard sizes it to its budget over the mean chunk size and rebuilds the index when that drifts
// (policy.go), so tinylfu does almost all of the evicting.
//
// # Admission
//
// TinyLFU may decline to keep a new item: a new key enters a small window; when it leaves the
// window of a full shard it is admitted only if the doorkeeper has seen the key before and its
// estimated frequency is not below the victim's. A declined item is dropped (counted in
// evictions) and a later Get misses. Store still returns Stored: the write was accepted, as
// memcached accepts a set whose item is evicted right away. This is what gives the cache its hit
// ratio on skewed workloads; a one-off key does not push out a popular one. Every lookup (hits
// and misses) is an access for tinylfu; Peek and Walk read records without one.
//
// # Time and expiry
//
// Expiry and flush_all use whole unix seconds from Config.Clock (tests inject a fake clock and
// never sleep). An access that finds an expired item reclaims it, so does a store that needs
// room and finds one in its class; Maintain sweeps a bounded number of chunks per call, as
// memcached's LRU crawler does, so expired items go without traffic.
//
// # Locks and bytes
//
// Lock order: the FlushAll and Maintain mutexes are taken before a shard lock, never while one
// is held; no code holds two shard locks. Stats, ShardStats, Walk, FlushAll and Maintain take
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
//   - -m covers the index too: at the same -m a cache of small items holds fewer of them than
//     memcached (whose hash table is outside -m), and the process stays near -m.
package cache
