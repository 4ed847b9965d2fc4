package handler

import (
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// stats answers "stats" and its subcommands; unknown ones are an ERROR, as
// in memcached.
//
// tandem has no slab classes: "stats items" and "stats slabs" report one
// entry per cache shard instead (shard i is class i+1), with memcached's
// field names where the meaning carries over and tandem_ names for the
// rest; see docs/protocol.md.
func (h *Handler) stats(r *protocol.Request, out []byte) []byte {
	if len(r.Args) == 0 {
		st := h.Stats()
		out = appendGeneralStats(out, &st, orNULL(h.cfg.EventLibrary), h.cfg.TandemVersion)
		return append(out, protocol.RespEnd...)
	}
	switch string(r.Args[0]) {
	case "reset":
		h.resetStats()
		return append(out, protocol.RespReset...)
	case "settings":
		if h.cfg.Settings != nil {
			for _, s := range h.cfg.Settings(h.live()) {
				out = protocol.AppendStatString(out, s.Name, s.Value)
			}
		}
	case "detail":
		return h.statsDetail(r.Args[1:], out)
	case "cachedump":
		return h.statsCachedump(r.Args[1:], out)
	case "items":
		out = h.appendItemsStats(out)
	case "slabs":
		out = h.appendSlabsStats(out)
	case "conns":
		out = h.appendConnsStats(out)
	case "sizes":
		// memcached 1.6.18 tracks item sizes only with -o track_sizes, off by
		// default; tandem has no such tracking.
		out = protocol.AppendStatString(out, "sizes_status", "disabled")
	case "sizes_enable", "sizes_disable":
		// memcached answers these with the status line alone, no END.
		// tandem cannot turn the tracking on: it answers as memcached does
		// when the histogram cannot be made.
		if string(r.Args[0]) == "sizes_disable" {
			return protocol.AppendStatString(out, "sizes_status", "disabled")
		}
		out = protocol.AppendStatString(out, "sizes_status", "error")
		return protocol.AppendStatString(out, "sizes_error", "not_supported")
	case "extstore":
		// memcached without external storage configured: no rows.
	default:
		return append(out, protocol.RespError...)
	}
	return append(out, protocol.RespEnd...)
}

// statsDetail answers "stats detail on|off|dump" (per-prefix stats).
func (h *Handler) statsDetail(args [][]byte, out []byte) []byte {
	if len(args) >= 1 {
		switch string(args[0]) {
		case "on":
			h.prefixes.enabled.Store(true)
			return append(out, protocol.RespOK...)
		case "off":
			h.prefixes.enabled.Store(false)
			return append(out, protocol.RespOK...)
		case "dump":
			return append(h.prefixes.appendDump(out), protocol.RespEnd...)
		}
	}
	return appendLine(out, protocol.ReplyStatsDetailUsage)
}

// shardID is the class number a shard is reported under (memcached's slab
// classes start at 1).
func shardID(s *cache.ShardStats) string { return strconv.Itoa(s.Shard + 1) }

// appendItemsStats writes "stats items": one block per shard holding items,
// like memcached's per-class item stats, with every field memcached 1.6.18
// prints, in its order, then tandem's. tandem keeps one list per shard where
// memcached segments its LRU: its items and hits are reported as COLD (the
// segment memcached evicts from), HOT, WARM and TEMP are empty. Fields of
// what tandem does not have (tail repairs, the LRU crawler and maintainer)
// are 0, and so are evicted_nonzero and evicted_time, which the cache does
// not report (see docs/protocol.md).
func (h *Handler) appendItemsStats(out []byte) []byte {
	for _, s := range h.cfg.Cache.ShardStats(nil) {
		if s.CurrItems == 0 {
			continue
		}
		prefix := "items:" + shardID(&s) + ":"
		c := &s.Stats
		for _, f := range [...]struct {
			name string
			v    uint64
		}{
			{"number", s.CurrItems},
			{"number_hot", 0},
			{"number_warm", 0},
			{"number_cold", s.CurrItems},
			{"age_hot", 0},
			{"age_warm", 0},
			{"age", uint64(s.Age)},
			{"mem_requested", s.Bytes},
			{"evicted", c.Evictions},
			{"evicted_nonzero", 0},
			{"evicted_time", 0},
			{"outofmemory", c.StoreNoMemory},
			{"tailrepairs", 0},
			{"reclaimed", c.Reclaimed},
			{"expired_unfetched", c.ExpiredUnfetched},
			{"evicted_unfetched", c.EvictedUnfetched},
			{"evicted_active", 0},
			{"crawler_reclaimed", 0},
			{"crawler_items_checked", 0},
			{"lrutail_reflocked", 0},
			{"moves_to_cold", 0},
			{"moves_to_warm", 0},
			{"moves_within_lru", 0},
			{"direct_reclaims", 0},
			{"hits_to_hot", 0},
			{"hits_to_warm", 0},
			{"hits_to_cold", c.GetHits},
			{"hits_to_temp", 0},
			{"tandem_byte_evictions", c.ByteEvictions},
		} {
			out = protocol.AppendStatString(out, prefix+f.name, strconv.FormatUint(f.v, 10))
		}
	}
	return out
}

// appendSlabsStats writes "stats slabs": one block per shard that holds or
// has stored items, with memcached 1.6.18's fields in its order (the chunk
// and page figures derived as SlabView says), then tandem's, then the
// totals.
func (h *Handler) appendSlabsStats(out []byte) []byte {
	shards := h.cfg.Cache.ShardStats(nil)
	active := 0
	var malloced uint64
	for _, s := range shards {
		malloced += s.Used
		if s.CurrItems == 0 && s.CmdSet == 0 {
			continue
		}
		active++
		prefix := shardID(&s) + ":"
		c := &s.Stats
		v := ShardSlab(&s)
		for _, f := range [...]struct {
			name string
			v    uint64
		}{
			{"chunk_size", v.ChunkSize},
			{"chunks_per_page", v.ChunksPerPage},
			{"total_pages", v.TotalPages},
			{"total_chunks", v.TotalChunks},
			{"used_chunks", v.UsedChunks},
			{"free_chunks", v.FreeChunks},
			{"free_chunks_end", v.FreeChunksEnd},
			{"get_hits", c.GetHits},
			{"cmd_set", c.CmdSet},
			{"delete_hits", c.DeleteHits},
			{"incr_hits", c.IncrHits},
			{"decr_hits", c.DecrHits},
			{"cas_hits", c.CasHits},
			{"cas_badval", c.CasBadval},
			{"touch_hits", c.TouchHits},
			{"tandem_mem_requested", s.Bytes},
			{"tandem_budget_bytes", s.Budget},
			{"tandem_index_capacity", s.IndexCapacity},
			{"tandem_index_entries", s.IndexEntries},
			{"tandem_tombstones", s.Tombstones},
			{"tandem_window_items", s.WindowItems},
		} {
			out = protocol.AppendStatString(out, prefix+f.name, strconv.FormatUint(f.v, 10))
		}
	}
	out = protocol.AppendStatString(out, "active_slabs", strconv.Itoa(active))
	// memcached's total_malloced is the memory of its slab pages; tandem's
	// is the memory charged against -m: slab pages and the index.
	out = protocol.AppendStatString(out, "total_malloced", strconv.FormatUint(malloced, 10))
	return protocol.AppendStatString(out, "tandem_shards", strconv.Itoa(len(shards)))
}

// appendConnsStats writes "stats conns" in memcached's format, sorted by fd.
func (h *Handler) appendConnsStats(out []byte) []byte {
	if h.cfg.Conns == nil {
		return out
	}
	conns := h.cfg.Conns()
	slices.SortFunc(conns, func(a, b protocol.ConnInfo) int { return a.FD - b.FD })
	now := h.cfg.Now()
	for _, c := range conns {
		prefix := strconv.Itoa(c.FD) + ":"
		out = protocol.AppendStatString(out, prefix+"addr", connAddr(c.Remote))
		state := "conn_waiting"
		idle := int64(0)
		switch {
		case c.Listening:
			state = "conn_listening"
			idle = int64(now.Sub(h.started) / time.Second)
		case c.Executing:
			state = "conn_parse_cmd"
		}
		if !c.Listening {
			out = protocol.AppendStatString(out, prefix+"listen_addr", connAddr(c.Local))
			if !c.LastActive.IsZero() {
				idle = int64(now.Sub(c.LastActive) / time.Second)
			}
		}
		out = protocol.AppendStatString(out, prefix+"state", state)
		out = protocol.AppendStatString(out, prefix+"secs_since_last_cmd", strconv.FormatInt(max(idle, 0), 10))
		if c.TLS != "" {
			// tandem's own line: memcached's stats conns does not say.
			out = protocol.AppendStatString(out, prefix+"tls", c.TLS)
		}
	}
	return out
}

// connAddr formats an address as memcached does: tcp:1.2.3.4:5 or
// tcp6:[::1]:5.
func connAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		if a == nil {
			return "unknown"
		}
		return a.Network() + ":" + a.String()
	}
	port := strconv.Itoa(ta.Port)
	if ip4 := ta.IP.To4(); ip4 != nil {
		return "tcp:" + ip4.String() + ":" + port
	}
	return "tcp6:[" + ta.IP.String() + "]:" + port
}
