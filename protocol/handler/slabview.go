package handler

import "github.com/tandemcache/tandem/cache"

// SlabPageSize is the page size the slab figures count in: memcached's
// slab page (1 MiB), so that a page in "stats slabs" means what it means
// for memcached.
const SlabPageSize = 1 << 20

// SlabView is one class of "stats slabs" (and the exporter's
// memcached_slab_* chunk and page metrics), derived from a cache shard:
// tandem reports its shards as memcached's slab classes (see stats items),
// and the cache exports per shard the bytes of its items and the memory
// charged to the shard, not its own size classes. So:
//
//   - UsedChunks is the shard's live items (one chunk each);
//   - ChunkSize is their mean size (key + value + 48 bytes), rounded up to
//     8 bytes, as memcached's chunk is the size of its items;
//   - ChunksPerPage is SlabPageSize / ChunkSize; FreeChunksEnd is 0;
//   - FreeChunks is the room left in the shard's budget, in chunks of
//     ChunkSize, and TotalChunks = UsedChunks + FreeChunks: a class is
//     "full" (memcached-tool's Full? column) when its budget is spent;
//   - TotalPages is TotalChunks in pages of ChunksPerPage, rounded up, so
//     that total_pages x chunks_per_page covers total_chunks within one
//     page, as in memcached (whose last page may be partly used).
//
// A shard without items has every field 0 (memcached-tool then skips it,
// as it skips a class without pages).
type SlabView struct {
	ChunkSize     uint64
	ChunksPerPage uint64
	TotalPages    uint64
	TotalChunks   uint64
	UsedChunks    uint64
	FreeChunks    uint64
	FreeChunksEnd uint64
}

// ShardSlab derives a SlabView from one shard's stats.
func ShardSlab(s *cache.ShardStats) SlabView {
	if s.CurrItems == 0 {
		return SlabView{}
	}
	v := SlabView{UsedChunks: s.CurrItems}
	v.ChunkSize = (s.Bytes/s.CurrItems + 7) &^ 7
	v.ChunkSize = max(v.ChunkSize, 8)
	v.ChunksPerPage = SlabPageSize / v.ChunkSize
	if s.Budget > s.Used {
		v.FreeChunks = (s.Budget - s.Used) / v.ChunkSize
	}
	v.TotalChunks = v.UsedChunks + v.FreeChunks
	v.TotalPages = max((v.TotalChunks+v.ChunksPerPage-1)/v.ChunksPerPage, 1)
	return v
}
