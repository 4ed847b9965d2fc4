package handler

import (
	"math"
	"strconv"

	"github.com/tandemcache/tandem/protocol"
)

// Admin commands of memcached 1.6.18 that tune its slab allocator and
// memory limit at run time: "slabs automove", "slabs reassign" and
// "cache_memlimit". Their argument checks and replies are memcached's
// (proto_text.c), byte for byte.
//
// tandem's cache moves memory between its classes by itself (a store that
// needs room frees whichever page holds the least useful items), so
// "slabs reassign" and "slabs automove" have nothing to start: tandem
// validates them as memcached does, answers as memcached does when it
// accepts them, and reports the automove settings in "stats settings".

// Replies of the admin commands.
const (
	replySlabsBadFormat     = "CLIENT_ERROR bad command line format"
	replySlabsSame          = "SAME src and dst class are identical"
	replySlabsBadClass      = "BADCLASS invalid src or dst class id"
	replyMemlimitTooSmall   = "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m"
	replyMemlimitMegabytes  = "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes"
	replyMemlimitCannotDoIt = "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust"
)

// MemoryLimiter is what cache_memlimit needs of the cache: a new -m in
// bytes, applied at run time (shrinking evicts down to it). The handler
// checks whether its cache implements it; while it does not, cache_memlimit
// answers memcached's reply for a limit it cannot apply.
type MemoryLimiter interface {
	SetMemoryLimit(bytes int64) error
}

// noreplyLast is memcached's set_noreply_maybe: the last token is "noreply".
func noreplyLast(args [][]byte) bool {
	return len(args) > 0 && string(args[len(args)-1]) == "noreply"
}

// slabsCmd answers "slabs reassign <src> <dst>" and "slabs automove
// <0|1|2>" / "slabs automove ratio <r>". As in memcached, reassign takes
// exactly two arguments (a noreply is a third) and automove at least one.
// A last noreply silences the reply, whatever it is, as in memcached 1.6.45
// (newer.go: "admin noreply"; 1.6.18 honoured it for automove only).
func (h *Handler) slabsCmd(r *protocol.Request, out []byte) []byte {
	if noreplyLast(r.Args) {
		_ = h.slabsReply(r.Args, nil)
		return out
	}
	return h.slabsReply(r.Args, out)
}

// slabsReply appends slabsCmd's reply to out.
func (h *Handler) slabsReply(args [][]byte, out []byte) []byte {
	switch {
	case len(args) == 3 && string(args[0]) == "reassign":
		src, ok1 := protocol.ParseInt32(args[1])
		dst, ok2 := protocol.ParseInt32(args[2])
		switch {
		case !ok1 || !ok2:
			return appendLine(out, replySlabsBadFormat)
		case src == dst:
			return appendLine(out, replySlabsSame)
		case src < -1 || dst < 0 || int(src) > h.classes() || int(dst) > h.classes():
			// -1 asks memcached to pick the source; class 0 is its global
			// page pool.
			return appendLine(out, replySlabsBadClass)
		}
		return append(out, protocol.RespOK...)
	case len(args) >= 2 && string(args[0]) == "automove":
		return appendLine(out, h.slabsAutomove(args))
	}
	return append(out, protocol.RespError...)
}

// slabsAutomove applies "slabs automove ..." and returns its reply line.
func (h *Handler) slabsAutomove(args [][]byte) string {
	if string(args[1]) == "ratio" {
		if len(args) < 3 {
			return protocol.ReplyError
		}
		ratio, err := strconv.ParseFloat(string(args[2]), 64)
		if err != nil {
			return protocol.ReplyError
		}
		h.automoveRatio.Store(math.Float64bits(ratio))
		return "OK"
	}
	level, ok := protocol.ParseUint32(args[1])
	switch {
	case !ok:
		return replySlabsBadFormat
	case level > 2:
		return protocol.ReplyError
	}
	h.automove.Store(int32(level))
	return "OK"
}

// classes is the highest class id tandem reports (its shard count).
func (h *Handler) classes() int { return h.cfg.Cache.Shards() }

// cacheMemlimit answers "cache_memlimit <megabytes> [noreply]".
func (h *Handler) cacheMemlimit(r *protocol.Request, out []byte) []byte {
	if len(r.Args) < 1 || len(r.Args) > 2 {
		return append(out, protocol.RespError...)
	}
	noreply := noreplyLast(r.Args)
	line := h.setMemlimit(r.Args[0])
	if noreply {
		return out
	}
	return appendLine(out, line)
}

// setMemlimit applies cache_memlimit's argument and returns the reply line.
func (h *Handler) setMemlimit(arg []byte) string {
	mb, ok := protocol.ParseUint32(arg)
	switch {
	case !ok:
		return protocol.ReplyError
	case mb < 8:
		return replyMemlimitTooSmall
	case mb > 1_000_000_000:
		return replyMemlimitMegabytes
	}
	lim := h.limiter
	if lim == nil {
		return replyMemlimitCannotDoIt
	}
	bytes := int64(mb) << 20
	if int64(h.cfg.MaxItemSize) > bytes || lim.SetMemoryLimit(bytes) != nil {
		return replyMemlimitCannotDoIt
	}
	h.memLimit.Store(bytes)
	if h.cfg.OnMemoryLimit != nil {
		h.cfg.OnMemoryLimit(bytes)
	}
	return "OK"
}
