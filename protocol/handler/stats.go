package handler

import (
	"fmt"
	"strconv"
	"syscall"

	"github.com/tandemcache/tandem/protocol"
)

// stats answers "stats" and its subcommands.
func (h *Handler) stats(r *protocol.Request, out []byte) []byte {
	if len(r.Args) == 0 {
		return append(h.appendGeneralStats(out), protocol.RespEnd...)
	}
	switch string(r.Args[0]) {
	case "settings":
		if h.cfg.Settings != nil {
			for _, s := range h.cfg.Settings() {
				out = protocol.AppendStatString(out, s.Name, s.Value)
			}
		}
		return append(out, protocol.RespEnd...)
	case "detail":
		// Per-prefix detail stats are not kept; the switch is accepted as
		// memcached accepts it, and the dump is empty.
		if len(r.Args) >= 2 {
			switch string(r.Args[1]) {
			case "on", "off":
				return append(out, protocol.RespOK...)
			case "dump":
				return append(out, protocol.RespEnd...)
			}
		}
		return appendLine(out, protocol.ReplyStatsDetailUsage)
	case "cachedump":
		// Items are not kept in slab classes: every class dumps empty.
		if len(r.Args) < 3 {
			return appendLine(out, protocol.ReplyBadCommandLine)
		}
		id, err1 := strconv.ParseUint(string(r.Args[1]), 10, 32)
		_, err2 := strconv.ParseUint(string(r.Args[2]), 10, 32)
		if err1 != nil || err2 != nil {
			return appendLine(out, protocol.ReplyBadFormat)
		}
		if id == 0 || id > 63 {
			return appendLine(out, protocol.ReplyIllegalSlabID)
		}
		return append(out, protocol.RespEnd...)
	case "reset":
		h.cfg.Cache.ResetStats()
		h.bytesRead.Store(0)
		h.bytesWritten.Store(0)
		return append(out, protocol.RespReset...)
	}
	return h.statsExt(r, out)
}

// appendGeneralStats writes memcached's general stats, in memcached's order,
// followed by tandem's own fields.
func (h *Handler) appendGeneralStats(out []byte) []byte {
	now := h.cfg.Now()
	var si ServerInfo
	if h.cfg.Server != nil {
		si = h.cfg.Server()
	}
	cs := h.cfg.Cache.Stats()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)

	u := func(name string, v uint64) { out = protocol.AppendStatUint(out, name, v) }
	i := func(name string, v int64) { out = protocol.AppendStatInt(out, name, v) }
	s := func(name, v string) { out = protocol.AppendStatString(out, name, v) }

	i("pid", int64(h.pid))
	i("uptime", int64(now.Sub(h.started).Seconds()))
	i("time", now.Unix())
	s("version", Version)
	s("pointer_size", "64")
	s("rusage_user", rusageSeconds(ru.Utime))
	s("rusage_system", rusageSeconds(ru.Stime))
	i("max_connections", int64(si.MaxConns))
	i("curr_connections", si.CurrConns)
	u("total_connections", si.TotalConns)
	u("rejected_connections", si.RejectedConns)
	u("cmd_get", cs.CmdGet)
	u("cmd_set", cs.CmdSet)
	u("cmd_flush", cs.CmdFlush)
	u("cmd_touch", cs.CmdTouch)
	u("get_hits", cs.GetHits)
	u("get_misses", cs.GetMisses)
	u("get_expired", cs.GetExpired)
	u("get_flushed", cs.GetFlushed)
	u("delete_misses", cs.DeleteMisses)
	u("delete_hits", cs.DeleteHits)
	u("incr_misses", cs.IncrMisses)
	u("incr_hits", cs.IncrHits)
	u("decr_misses", cs.DecrMisses)
	u("decr_hits", cs.DecrHits)
	u("cas_misses", cs.CasMisses)
	u("cas_hits", cs.CasHits)
	u("cas_badval", cs.CasBadval)
	u("touch_hits", cs.TouchHits)
	u("touch_misses", cs.TouchMisses)
	u("store_too_large", cs.StoreTooLarge)
	u("store_no_memory", cs.StoreNoMemory)
	authCmds, authErrors := h.AuthStats()
	u("auth_cmds", authCmds)
	u("auth_errors", authErrors)
	u("bytes_read", h.bytesRead.Load())
	u("bytes_written", h.bytesWritten.Load())
	u("limit_maxbytes", cs.LimitMaxbytes)
	s("accepting_conns", "1")
	i("threads", int64(si.Threads))
	u("bytes", cs.Bytes)
	u("curr_items", cs.CurrItems)
	u("total_items", cs.TotalItems)
	u("expired_unfetched", cs.ExpiredUnfetched)
	u("evicted_unfetched", cs.EvictedUnfetched)
	u("evictions", cs.Evictions)
	u("reclaimed", cs.Reclaimed)
	// tandem's own fields.
	s("tandem_version", h.cfg.TandemVersion)
	s("tandem_mode", si.Mode)
	i("tandem_event_loops", int64(si.Threads))
	i("tandem_workers", int64(si.Workers))
	i("tandem_pool_running", int64(si.PoolRunning))
	i("tandem_pool_parked", si.PoolParked)
	u("tandem_pool_overloads", si.PoolOverloads)
	u("tandem_panics", si.Panics)
	return out
}

// rusageSeconds formats a CPU time like memcached ("%ld.%06ld").
func rusageSeconds(tv syscall.Timeval) string {
	return fmt.Sprintf("%d.%06d", tv.Sec, tv.Usec)
}
