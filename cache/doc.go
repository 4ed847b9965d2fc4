// Package cache is tandem's storage engine: a sharded, byte-bounded key-value cache with
// memcached 1.6.18 semantics (storage modes, cas ids, exptime rules, flush_all, incr/decr,
// stats counters) and TinyLFU admission and eviction from github.com/dgryski/go-tinylfu.
//
// What it owns: items, their bytes, expiry and the memory budget. What it does not: the
// protocol (operations return Outcome values; the caller turns them into reply text), the
// network, logging and goroutines: New starts none and all work happens in the callers'
// goroutines; only a CoarseClock runs one, between its owner's Start and Stop calls.
//
// # Structure
//
// Keys are hashed with hash/maphash; the high bits of the hash pick a shard, each with one
// sync.Mutex, a tinylfu instance keyed by the 64-bit hash (the full key is stored in the item and
// compared, and a different key with the same hash replaces the old one), and an intrusive list
// of live items in recency order. tinylfu capacity is an item count while -m is in bytes, so each
// shard sizes its tinylfu to its byte budget divided by the mean item cost and rebuilds it from
// the list when that drifts (amortized O(1) per store). Deletes, expiry and byte-pressure
// evictions leave tombstones in tinylfu (the library has no Remove); tinylfu evicts them in time
// and rebuilds drop them.
//
// # Memory bound
//
// The key, value and ItemOverhead bytes of live items never exceed Config.MaxBytes: each of the
// N shards holds at most MaxBytes/N. A store that needs room reclaims expired items near the
// list's cold end, then evicts from it, or with DisableEvictions fails with NoMemory. Go-side
// bookkeeping is outside the budget: a 64-byte item struct and 64 bytes of tinylfu entry per
// item, plus tinylfu's presized map, sketch and doorkeeper at about 35 bytes per index slot
// (35-70 bytes per item while the index grows; see policy.go).
//
// # Admission
//
// TinyLFU may decline to keep a new item: a new key enters a small window; when it leaves the
// window of a full shard it is admitted only if the doorkeeper has seen the key before and its
// estimated frequency is not below the victim's. A declined item is dropped (counted in
// evictions) and a later Get misses. Store still returns Stored: the write was accepted, as
// memcached accepts a set whose item is evicted right away. This is what gives the cache its hit
// ratio on skewed workloads; a one-off key does not push out a popular one.
//
// # Time
//
// Expiry and flush_all use whole unix seconds from Config.Clock. SystemClock reads the system
// clock on every operation; CoarseClock, started and stopped by its owner, reads an atomic that
// a goroutine refreshes each second, as memcached's current_time does, and is the better choice
// for a server. Tests inject a fake clock and never sleep.
//
// # Locks and bytes
//
// Lock order: the FlushAll mutex is never held while taking a shard lock; no code holds two
// shard locks. Stats and ResetStats take the shard locks one at a time. The cache copies every
// key and value it stores, so callers may reuse their buffers. Get hands an Item view to an
// Appender under the shard lock; its Key and Value alias cache memory that a later Store may
// rewrite in place, so they must be copied (appended), never retained. The Appender must not call
// back into the Cache.
//
// # Differences from memcached
//
//   - A Set that must make room needs only the difference between the new and old item sizes;
//     memcached allocates the whole new item first. An add on a live key with memory full is
//     NotStored here, SERVER_ERROR out of memory there.
//   - flush_all is exact to the cas id for immediate flushes even with DisableCAS (every write
//     still gets a unique internal id; -C only hides it and makes every cas command Exists),
//     and a flush already in effect is not undone by a later delayed flush_all. A flush_all with
//     an absolute time in the past flushes at once (memcached ignores times before its start).
//   - Expired and flushed items are counted in get_expired/get_flushed when an access finds them;
//     memcached's background LRU maintainer often reclaims them first (counted in reclaimed).
//   - An immediate flush_all frees the flushed items right away, which memcached's LRU crawler
//     does shortly after.
package cache
