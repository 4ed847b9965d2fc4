package handler

import (
	"bytes"
	"slices"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// Key dumps: "lru_crawler metadump all|hash|<classes>" lists every live
// item of the cache (or of some classes), "stats cachedump <class> <limit>"
// the items of one class, in memcached 1.6.18's formats. A class is a cache
// shard (shard i is class i+1, as "stats items" reports them).
//
// Both walk the cache with cache.Walk, a bounded number of slots per
// shard lock hold, so a dump changes nothing, needs no memory of its own
// beyond its reply, and holds up no other client for long. A cachedump
// reply is capped at 2 MiB, as memcached caps it. A metadump can be far
// larger (about 90 bytes a key), so it is produced in parts of about
// dumpPartBytes: when the reactor drives Session.Continue (Session.Stream),
// each Execute or Continue appends one part and the dump streams in
// bounded memory; otherwise one Execute builds the dump up to DumpLimit
// bytes and ends it there.

// DumpLimit is the most bytes of "lru_crawler metadump" lines one Execute
// builds when the reactor does not stream (see Session.Stream): past it
// the dump ends with END after the lines that fit, and a warning is logged.
// It bounds a dumping connection's reply buffer, and keeps the reply below
// the reactor's per-slice output cap (--max-conn-output, 64 MiB by
// default). At about 90 bytes a line it holds some 180,000 keys.
const DumpLimit = 16 << 20

const (
	// dumpPartBytes is the size at which a metadump part ends.
	dumpPartBytes = 64 << 10
	// dumpWalkSlots is the slots one Walk call looks at: with keys of
	// 250 bytes, every byte escaped, at most ~220 KiB of lines.
	dumpWalkSlots = 256
	// dumpPartSlots bounds the slots one part looks at, so that a part of
	// a sparse cache ends too.
	dumpPartSlots = 64 << 10
	// dumpPartRoom is room for a part of common lines (about 100 bytes)
	// without growing the reply.
	dumpPartRoom = dumpPartBytes + dumpWalkSlots*100
	// maxSlabClasses is memcached's MAX_NUMBER_OF_SLAB_CLASSES: class ids
	// at or above it are illegal in dumps. tandem's classes are shards, up
	// to 64 of them by default (classes 1 to 64), so it accepts ids up to
	// its last class when that is higher (see Handler.maxClass).
	maxSlabClasses = 64
)

// maxClass is one past the highest class id a dump accepts: memcached's
// limit, or one past tandem's last class when it has more.
func (h *Handler) maxClass() int { return max(maxSlabClasses, h.cfg.Cache.Shards()+1) }

// keyDump is an unfinished "lru_crawler metadump": where its walk stands.
type keyDump struct {
	on      bool
	cur     cache.Cursor
	classes []int // the classes to walk after cur's, ascending; nil for a whole-cache walk
}

// next appends the next part of the dump to out: lines until the part
// holds dumpPartBytes or has looked at dumpPartSlots slots, and END once
// the walk is done (on is then false). It also returns the lines appended.
func (d *keyDump) next(c *cache.Cache, out []byte) ([]byte, int) {
	start, lines := len(out), 0
	var line protocol.MetadumpItem
	emit := func(class int, it *cache.Item) {
		line = protocol.MetadumpItem{Key: it.Key, Exptime: it.Exptime, LastAccess: it.LastAccess,
			CAS: it.CAS, Fetched: it.Fetched, Class: class, Size: len(it.Key) + len(it.Value) + cache.ItemOverhead}
		out = protocol.AppendMetadumpLine(out, &line)
		lines++
	}
	for looked := 0; looked < dumpPartSlots && len(out)-start < dumpPartBytes; looked += dumpWalkSlots {
		if d.cur.Done() {
			if len(d.classes) == 0 {
				*d = keyDump{}
				return append(out, protocol.RespEnd...), lines
			}
			d.cur, d.classes = c.ClassCursor(d.classes[0]), d.classes[1:]
		}
		d.cur = c.Walk(d.cur, dumpWalkSlots, emit)
	}
	return out, lines
}

// newKeyDump starts the dump that "lru_crawler metadump <arg>" asks for,
// or returns memcached's error line for arg: "all" and "hash" walk the
// whole cache (tandem has one order to walk in); otherwise arg is a comma
// separated list of class ids, each read as memcached reads numbers, empty
// ones skipped.
func (h *Handler) newKeyDump(arg []byte) (keyDump, string) {
	c := h.cfg.Cache
	if string(arg) == "all" || string(arg) == "hash" {
		return keyDump{on: true}, ""
	}
	var classes []int
	for tok := range bytes.SplitSeq(arg, []byte(",")) {
		if len(tok) == 0 {
			continue
		}
		id, ok := protocol.ParseUint32(tok)
		if !ok || id < 1 || int64(id) >= int64(h.maxClass()) {
			return keyDump{}, protocol.ReplyBadClass
		}
		classes = append(classes, int(id))
	}
	if len(classes) == 0 {
		return keyDump{}, protocol.ReplyNotStarted
	}
	slices.Sort(classes)
	classes = slices.Compact(classes)
	return keyDump{on: true, cur: c.ClassCursor(classes[0]), classes: classes[1:]}, ""
}

// lruCrawler answers lru_crawler: metadump here, the other subcommands in
// crawler.go.
func (s *Session) lruCrawler(r *protocol.Request, out []byte) []byte {
	h := s.h
	if len(r.Args) != 2 || string(r.Args[0]) != "metadump" {
		return s.crawlerCmd(r, out)
	}
	if h.cfg.DisableDumps {
		return appendLine(out, protocol.ReplyMetadumpDenied)
	}
	if h.crawler.disabled.Load() {
		return appendLine(out, replyCrawlerDisabled)
	}
	d, errLine := h.newKeyDump(r.Args[1])
	if errLine != "" {
		return appendLine(out, errLine)
	}
	s.dump = d
	h.count(CrawlerStarts, 1)
	h.dumpsRunning.Add(1)
	if s.streaming {
		return s.dumpPart(out)
	}
	return s.finishDump(out)
}

// dumpPart appends the next part of the session's dump and counts it.
func (s *Session) dumpPart(out []byte) []byte {
	out, lines := s.dump.next(s.h.cfg.Cache, out)
	s.h.count(CrawlerItemsChecked, uint64(lines))
	if !s.dump.on {
		s.h.dumpsRunning.Add(-1)
	}
	return out
}

// dropDump ends the session's dump where it stands.
func (s *Session) dropDump() {
	if s.dump.on {
		s.dump = keyDump{}
		s.h.dumpsRunning.Add(-1)
	}
}

// finishDump appends the rest of the session's dump, up to DumpLimit bytes,
// and ends it. The reply grows by doubling (append grows a large slice by a
// quarter at a time, which would copy a 16 MiB dump some twenty times).
func (s *Session) finishDump(out []byte) []byte {
	start := len(out)
	for s.dump.on {
		if len(out)-start >= s.h.dumpLimit {
			s.dropDump()
			s.h.cfg.Logger.Warn().Str("peer", s.peer).Int("bytes", len(out)-start).
				Msg("lru_crawler metadump cut short: the reactor does not stream replies")
			return append(out, protocol.RespEnd...)
		}
		if cap(out)-len(out) < dumpPartRoom {
			out = slices.Grow(out, max(len(out), 2*dumpPartRoom))
		}
		out = s.dumpPart(out)
	}
	return out
}

// statsCachedump answers "stats cachedump <class> <limit>": the items of a
// class, up to limit of them (0: all), as "ITEM <key> [<value bytes> b;
// <exptime> s]" lines, in at most 2 MiB as memcached. Items stored with a
// base64 key are left out, as memcached leaves them out.
func (h *Handler) statsCachedump(args [][]byte, out []byte) []byte {
	if h.cfg.DisableDumps {
		return appendLine(out, protocol.ReplyCachedumpDenied)
	}
	if len(args) < 2 {
		return appendLine(out, protocol.ReplyBadCommandLine)
	}
	id, ok1 := protocol.ParseUint32(args[0])
	limit, ok2 := protocol.ParseUint32(args[1])
	if !ok1 || !ok2 {
		return appendLine(out, protocol.ReplyBadFormat)
	}
	if int64(id) >= int64(h.maxClass()) {
		return appendLine(out, protocol.ReplyIllegalSlabID)
	}
	c := h.cfg.Cache
	start := len(out)
	shown, full := uint32(0), false
	emit := func(_ int, it *cache.Item) {
		if full || it.KeyBinary || (limit != 0 && shown == limit) {
			return
		}
		n := len(out)
		out = protocol.AppendCachedumpLine(out, it.Key, len(it.Value), it.Exptime)
		// memcached's rule: a line goes in if END and a NUL still fit after it.
		if len(out)-start+len(protocol.RespEnd)+1 > protocol.CachedumpLimit {
			out, full = out[:n], true
			return
		}
		shown++
	}
	for cur := c.ClassCursor(int(id)); !cur.Done() && !full && (limit == 0 || shown < limit); {
		cur = c.Walk(cur, dumpWalkSlots, emit)
	}
	return append(out, protocol.RespEnd...)
}
