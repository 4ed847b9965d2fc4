package cache

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Cache is a sharded, byte-bounded key-value cache with memcached semantics and TinyLFU
// admission. All methods are safe for concurrent use.
type Cache struct {
	shards     []shard
	shift      uint // shard index = hash >> shift (the high bits; tinylfu uses the low ones)
	seed       maphash.Seed
	clock      Clock
	limit      atomic.Int64 // Config.MaxBytes, or what SetMemoryLimit set
	maxItem    int64        // the item size limit
	disableCAS bool

	casID    atomic.Uint64              // last cas id handed out
	flush    atomic.Pointer[flushState] // nil until the first flush_all
	flushMu  sync.Mutex                 // serializes FlushAll
	cmdFlush atomic.Uint64

	sweepMu sync.Mutex // serializes Maintain
	sweep   Cursor     // where Maintain continues; guarded by sweepMu

	file     *memFile        // Config.MemoryFile's mapping, or nil (restart.go)
	fileSeed uint64          // with a file: fileHash's seed, which picks the shard
	settings restartSettings // what the file's layout depends on
	restart  Restart         // how the Cache started with its file
	large    bool            // Config.LargeClientFlags
}

// LargeClientFlags reports whether the Cache keeps 64-bit client flags (Config.LargeClientFlags).
func (c *Cache) LargeClientFlags() bool { return c.large }

// New builds a Cache from cfg, which must pass Validate. It starts no goroutines.
func New(cfg Config) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, budget := cfg.layout()
	c := &Cache{
		shards:     make([]shard, n),
		shift:      uint(64 - bits.TrailingZeros(uint(n))),
		seed:       maphash.MakeSeed(),
		clock:      cmp.Or(cfg.Clock, SystemClock()),
		maxItem:    cfg.maxItemSize(),
		disableCAS: cfg.DisableCAS,
		large:      cfg.LargeClientFlags,
	}
	// Pages of at most 1/64 of the budget (and 1 MiB); chunks of up to a quarter of that (and
	// maxSmall) share pages.
	page := min(1<<bits.Len64(uint64(budget/128)), 1<<20)
	scfg := &shardConfig{
		seed:             c.seed,
		maxItem:          cfg.maxItemSize(),
		maxCap:           int(budget / (int64(sizeClass(hdrSize+1)) + mainEntryBytes())), // minimal items
		maxPage:          page,
		maxChunk:         min(page/4, maxSmall),
		windowPercent:    int64(cmp.Or(cfg.WindowPercent, defaultWindowPercent)),
		disableEvictions: cfg.DisableEvictions,
		onEvict:          cfg.OnEvict,
		tail:             flagsTailOf(cfg),
	}
	if cfg.MemoryFile != "" {
		if err := c.openFile(cfg, n, budget, scfg); err != nil {
			return nil, err
		}
	} else {
		c.initShards(cfg, budget, scfg)
	}
	c.limit.Store(cfg.MaxBytes)
	runtime.AddCleanup(c, unmapPages, c.shards)
	if c.file != nil {
		runtime.AddCleanup(c, closeMemFile, c.file)
	}
	return c, nil
}

// initShards makes every shard fresh and empty.
func (c *Cache) initShards(cfg Config, budget int64, scfg *shardConfig) {
	for i := range c.shards {
		c.shards[i] = shard{cfg: scfg, slab: make([]slabClass, len(slabSizes)), budget: budget, keep: noHandle, rnd: uint64(i)*0x9E3779B97F4A7C15 + 1}
		s := &c.shards[i]
		if c.file != nil {
			s.file = c.file.arena(i)
		}
		if cfg.DisableEvictions {
			s.newMainLocked(minCapacity) // nothing is offered to it: it only counts
		} else {
			s.newMainLocked(min(initialCapacity, scfg.maxCap/4))
		}
	}
}

// openFile maps cfg.MemoryFile and restores the items of the last graceful stop from it, or
// starts cold, saying why in c.restart (restart.go).
func (c *Cache) openFile(cfg Config, n int, budget int64, scfg *shardConfig) error {
	start := time.Now()
	f, meta, reason, err := openMemFile(cfg, n, budget, scfg)
	if err != nil {
		return err
	}
	c.file, c.settings = f, settingsOf(cfg, n, f.region, scfg)
	c.restart = Restart{File: cfg.MemoryFile, Reason: reason}
	c.fileSeed = rand.Uint64()
	if meta != nil {
		c.fileSeed = meta.Seed
	}
	c.initShards(cfg, budget, scfg)
	if meta != nil {
		items, dropped, bytes, err := c.restore(meta)
		if err != nil {
			c.restart.Reason = err.Error()
			c.casID.Store(0)
			c.flush.Store(nil)
			if err := f.empty(); err != nil {
				return fmt.Errorf("cache: memory file %s: %w", cfg.MemoryFile, err)
			}
			c.initShards(cfg, budget, scfg)
		} else {
			c.restart.Warm, c.restart.Items, c.restart.Dropped, c.restart.SavedAt = true, items, dropped, meta.SavedAt
			c.restart.Bytes = bytes
		}
	}
	c.restart.Took = time.Since(start)
	return nil
}

// ErrMemoryLimit is returned by SetMemoryLimit for a limit below one item of the maximum size
// per shard.
var ErrMemoryLimit = errors.New("cache: memory limit too small for the item size limit")

// SetMemoryLimit changes MaxBytes at run time, as memcached's cache_memlimit does: every shard's
// budget becomes bytes / Shards(), and a shard over its new budget makes room (through the
// policy, as a store does) before the call returns. The page size and the shard count stay as
// New chose them.
func (c *Cache) SetMemoryLimit(bytes int64) error {
	budget := bytes / int64(len(c.shards))
	if budget < c.maxItem {
		return ErrMemoryLimit
	}
	c.limit.Store(bytes)
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.budget = budget
		s.fitLocked(noHandle, 0)
		s.mu.Unlock()
	}
	return nil
}

// lock hashes key, locks its shard and records the time and flush settings of the operation
// about to run under the lock (walk does the same for a whole shard).
func (c *Cache) lock(key []byte) (*shard, uint64) {
	h := maphash.Bytes(c.seed, key)
	s := &c.shards[h>>c.shift]
	if c.file != nil {
		s = &c.shards[fileHash(c.fileSeed, key)>>c.shift]
	}
	now, fl := c.clock.Now(), c.flush.Load()
	s.mu.Lock()
	s.now, s.flush = now, fl
	return s, h
}

func (c *Cache) nextCAS() uint64 { return c.casID.Add(1) }

// visibleCAS is the cas id clients see: 0 with DisableCAS.
func (c *Cache) visibleCAS(cas uint64) uint64 {
	if c.disableCAS {
		return 0
	}
	return cas
}

// GetOptions modifies a Get.
type GetOptions struct {
	Touch   bool  // gat/gats: set a new exptime on hit
	Exptime int64 // exptime as sent by the client (see StoredExptime), used with Touch
}

// Get looks key up. On a hit it calls a.AppendItem(dst, item) under the shard lock and returns
// its result and true; on a miss it returns dst unchanged and false. A hit marks the item
// fetched and most recently used. Counts cmd_get/get_hits/get_misses, or with Touch
// cmd_touch/touch_hits/touch_misses, and get_expired/get_flushed.
func (c *Cache) Get(dst, key []byte, opt GetOptions, a Appender) ([]byte, bool) {
	s, h := c.lock(key)
	defer s.mu.Unlock()
	_, r := s.findLocked(h, key)
	s.countLookupLocked(opt.Touch, r != nil)
	if r == nil {
		return dst, false
	}
	if opt.Touch {
		r.setExptime(exptime32(opt.Exptime, s.now))
	}
	view := s.viewLocked(c, r)
	s.touchLocked(r)
	return a.AppendItem(dst, view), true
}

// countLookupLocked counts one key looked up by a get (cmd_get, get_hits or get_misses) or by a
// touching get (cmd_touch, touch_hits or touch_misses).
func (s *shard) countLookupLocked(touch, hit bool) {
	cmd, hits, misses := &s.st.CmdGet, &s.st.GetHits, &s.st.GetMisses
	if touch {
		cmd, hits, misses = &s.st.CmdTouch, &s.st.TouchHits, &s.st.TouchMisses
	}
	*cmd++
	if hit {
		*hits++
	} else {
		*misses++
	}
}

// viewLocked is the view of r handed to an Appender.
func (s *shard) viewLocked(c *Cache, r record) Item {
	st := r.state()
	return Item{
		Key:           r.key(),
		Value:         r.value(),
		Flags:         s.flags(r),
		CAS:           c.visibleCAS(r.cas()),
		Exptime:       int64(r.exptime()),
		LastAccess:    int64(r.atime()),
		Fetched:       st&stFetched != 0,
		Stale:         st&stStale != 0,
		WinSentBefore: st&stTokenSent != 0,
		KeyBinary:     st&stKeyBinary != 0,
		Now:           s.now,
	}
}

// Store performs a storage command. flags and exptime are ignored by Append and Prepend, which
// keep the item's own; cas is used only by mode CAS. It returns the outcome and, when Stored,
// the new cas id (0 with DisableCAS). Stored may still be followed by a miss (see Admission in
// the package comment); an item already expired by its exptime is Stored yet invisible,
// replacing the old one. TooLarge and NoMemory on Set also remove the old item, as in memcached.
func (c *Cache) Store(mode StoreMode, key, value []byte, flags uint64, exptime int64, cas uint64) (Outcome, uint64) {
	s, h := c.lock(key)
	out, id, _ := s.storeLocked(c, h, mode, key, value, flags, exptime, cas)
	s.maintainLocked()
	s.mu.Unlock()
	return out, id
}

// Delete removes key: Deleted if it was live, else NotFound.
func (c *Cache) Delete(key []byte) Outcome { return c.MetaDelete(key, MetaDeleteOptions{}) }

// Touch sets a live item's exptime (as sent by the client, see StoredExptime) without changing
// its cas id: Touched, or NotFound. Counts cmd_touch and touch_hits/touch_misses.
func (c *Cache) Touch(key []byte, exptime int64) Outcome {
	if _, hit := c.Get(nil, key, GetOptions{Touch: true, Exptime: exptime}, discard{}); !hit {
		return NotFound
	}
	return Touched
}

// discard is an Appender that appends nothing.
type discard struct{}

func (discard) AppendItem(dst []byte, _ Item) []byte { return dst }
