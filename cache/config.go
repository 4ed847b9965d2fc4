package cache

import (
	"cmp"
	"errors"
	"fmt"
)

// ItemOverhead is the number of bytes the bytes statistic and the item size limit count per item
// besides its key and value: what memcached 1.6 charges per item (header, suffix and cas). The
// budget is charged the item's real memory instead (see the package comment's Memory bound).
const ItemOverhead = 48

// MaxKeyLen is the longest key the cache can hold; longer keys are TooLarge. The protocol layer
// enforces memcached's much smaller limit (250) before calling the cache.
const MaxKeyLen = 1<<16 - 1

// DefaultShards is Config.Shards' default, lowered until every shard holds two largest items
// and minShardBytes.
const DefaultShards = 64

// minShardBytes is the least budget a default shard gets. Each shard keeps its own pages per
// size class, and a class in use holds about one chunk it cannot fill (its page's uncarved tail
// or a free chunk); with values of varying size ~90 classes are in use, so a shard of 2 MiB lost
// ~10% of -m that way and hit up to 0.007 less than memcached (docs/benchmarks-appendix.md, 12b).
const minShardBytes = 16 << 20

// DefaultMaxItemSize is Config.MaxItemSize's default (memcached -I 1m), or MaxBytes if smaller.
const DefaultMaxItemSize = 1 << 20

const maxShards = 1 << 16

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("cache: invalid config")

// Config configures a Cache. The zero value is invalid: MaxBytes is required.
type Config struct {
	MaxBytes         int64 // byte budget (-m): the items' pages and the index never exceed it
	MaxItemSize      int   // -I; an item with len(key)+len(value)+ItemOverhead > MaxItemSize is TooLarge; 0 = DefaultMaxItemSize
	Shards           int   // power of two; 0 = DefaultShards; lowered until one item of MaxItemSize fits a shard
	DisableEvictions bool  // -M: a store that needs room fails with NoMemory instead of evicting
	DisableCAS       bool  // -C: cas ids are reported as 0 and a cas command on a live item is Exists (memcached -C)
	WindowPercent    int   // the window's share of each shard, 1-99 (see the package comment's Policy); 0 = 60
	Clock            Clock // nil = SystemClock()
	// OnEvict, if set, is called for every live item evicted (not for expired or flushed items
	// reclaimed), under its shard's lock: it must be quick, must not call into the Cache and must
	// not retain the Item or its slices (memcached's "watch evictions").
	OnEvict func(it *Item)
	// MemoryFile, if set, is a file the item memory lives in (memcached's -e), best on tmpfs:
	// SaveRestart writes MemoryFile.meta at a graceful stop, and the next New with the same
	// settings restores the items from the file (see Restart).
	MemoryFile string
	// LargeClientFlags makes client flags 64 bits wide (memcached built with configure's
	// --enable-large-client-flags): each record then carries 4 more bytes, after its value.
	// Without it the cache keeps the low 32 bits of the flags it is given, and its records and
	// memory file are those of a Cache without the field. A memory file saved with one setting
	// starts cold under the other.
	LargeClientFlags bool
}

// flagsTailOf is the bytes a record carries after its value for cfg (see flagsTail).
func flagsTailOf(cfg Config) int {
	if cfg.LargeClientFlags {
		return flagsTail
	}
	return 0
}

// Validate reports whether the config can build a Cache. Errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	if c.MaxBytes <= ItemOverhead {
		return fmt.Errorf("%w: MaxBytes must exceed the item overhead (%d bytes), got %d",
			ErrInvalidConfig, ItemOverhead, c.MaxBytes)
	}
	if c.MaxItemSize < 0 || (c.MaxItemSize != 0 && c.MaxItemSize <= ItemOverhead) {
		return fmt.Errorf("%w: MaxItemSize must be 0 or above the item overhead (%d bytes), got %d",
			ErrInvalidConfig, ItemOverhead, c.MaxItemSize)
	}
	if int64(c.MaxItemSize) > c.MaxBytes {
		return fmt.Errorf("%w: MaxItemSize %d exceeds MaxBytes %d", ErrInvalidConfig, c.MaxItemSize, c.MaxBytes)
	}
	if c.WindowPercent < 0 || c.WindowPercent > 99 {
		return fmt.Errorf("%w: WindowPercent must be 0 to 99, got %d", ErrInvalidConfig, c.WindowPercent)
	}
	if !ValidShards(c.Shards) {
		return fmt.Errorf("%w: Shards must be 0 or a power of two up to %d, got %d", ErrInvalidConfig, maxShards, c.Shards)
	}
	return nil
}

// ValidShards reports whether n is a shard count Config accepts: 0 (the default) or a power of
// two up to 65536.
func ValidShards(n int) bool { return n >= 0 && n <= maxShards && n&(n-1) == 0 }

// maxItemSize returns the effective item size limit.
func (c Config) maxItemSize() int64 {
	return cmp.Or(int64(c.MaxItemSize), min(DefaultMaxItemSize, c.MaxBytes))
}

// layout returns the shard count and each shard's byte budget. An explicit shard count is only
// lowered until one item of the maximum size fits a shard; the default also keeps room for two
// such items, so one large item does not empty its shard, and at least minShardBytes.
func (c Config) layout() (shards int, budget int64) {
	n, least := c.Shards, c.maxItemSize()
	if n == 0 {
		n, least = DefaultShards, max(2*least, minShardBytes)
	}
	for n > 1 && c.MaxBytes/int64(n) < least {
		n /= 2
	}
	return n, c.MaxBytes / int64(n)
}
