package handler

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"github.com/tandemcache/tandem/protocol"
)

// memcached 1.6.18's LRU crawler and LRU tuning commands, which cron jobs
// and scripts send: "lru_crawler crawl|enable|disable|sleep|tocrawl",
// "lru mode|temp_ttl|tune", "stats sizes_enable|sizes_disable" and
// "stats extstore". Their argument checks and replies are memcached's.
//
// tandem's expiry sweep plays the crawler's part (expired items are
// reclaimed without traffic): "lru_crawler disable" pauses it and "enable"
// resumes it, and "stats settings" reports the crawler's switch, sleep and
// tocrawl as last set. "lru_crawler crawl" has nothing to start (the sweep
// runs by itself) and is counted in lru_crawler_starts. The "lru" commands
// tune memcached's segmented LRU, which tandem does not have (its eviction
// is TinyLFU): they are validated and answered, and change nothing.

// Replies of the crawler commands (proto_text.c).
const (
	replyCrawlerDisabled   = "CLIENT_ERROR lru crawler disabled"
	replyCrawlerStartFail  = "ERROR failed to start lru crawler thread"
	replyCrawlerSleepLimit = "CLIENT_ERROR sleep must be one second or less"
	replyCrawlerUnknown    = "ERROR an unknown error happened"
	replyLruPcts           = "ERROR hot and warm pcts must not exceed 80"
	replyLruFactors        = "ERROR hot/warm age factors must be greater than 0"
)

// maxCrawlClass is memcached's MAX_NUMBER_OF_SLAB_CLASSES: "lru_crawler
// crawl" takes class ids 1 to maxCrawlClass-1.
const maxCrawlClass = 64

// crawlerState is what the crawler commands set. Its zero value is not
// memcached's default: see init.
type crawlerState struct {
	disabled atomic.Bool   // "lru_crawler disable" (memcached's default: enabled)
	sleep    atomic.Uint32 // lru_crawler_sleep, microseconds
	tocrawl  atomic.Uint32 // lru_crawler_tocrawl, items per class (0: all)
}

func (c *crawlerState) init() { c.sleep.Store(100) }

// CrawlerEnabled reports whether "lru_crawler disable" has not paused the
// crawler, which is the expiry sweep's switch.
func (h *Handler) CrawlerEnabled() bool { return !h.crawler.disabled.Load() }

// crawlerCmd answers the lru_crawler subcommands other than metadump.
func (s *Session) crawlerCmd(r *protocol.Request, out []byte) []byte {
	h, args := s.h, r.Args
	switch {
	case len(args) == 2 && string(args[0]) == "crawl":
		if h.crawler.disabled.Load() {
			return appendLine(out, replyCrawlerDisabled)
		}
		return appendLine(out, h.crawl(args[1]))
	case len(args) == 2 && string(args[0]) == "tocrawl":
		n, ok := protocol.ParseUint32(args[1])
		if !ok {
			return appendLine(out, protocol.ReplyBadFormat)
		}
		h.crawler.tocrawl.Store(n)
		return append(out, protocol.RespOK...)
	case len(args) == 2 && string(args[0]) == "sleep":
		n, ok := protocol.ParseUint32(args[1])
		switch {
		case !ok:
			return appendLine(out, protocol.ReplyBadFormat)
		case n > 1_000_000:
			return appendLine(out, replyCrawlerSleepLimit)
		}
		h.crawler.sleep.Store(n)
		return append(out, protocol.RespOK...)
	case len(args) == 1 && string(args[0]) == "enable":
		if !h.crawler.disabled.CompareAndSwap(true, false) {
			// memcached's reply when its crawler thread already runs.
			return appendLine(out, replyCrawlerStartFail)
		}
		return append(out, protocol.RespOK...)
	case len(args) == 1 && string(args[0]) == "disable":
		h.crawler.disabled.Store(true)
		return append(out, protocol.RespOK...)
	}
	return append(out, protocol.RespError...)
}

// crawl checks "lru_crawler crawl <classes>" as memcached does and returns
// its reply: "all", or class ids separated by commas.
func (h *Handler) crawl(arg []byte) string {
	switch string(arg) {
	case "all":
		h.count(CrawlerStarts, 1)
		return "OK"
	case "hash": // a metadump argument, an error for a crawl
		return replyCrawlerUnknown
	}
	n := 0
	for tok := range bytes.SplitSeq(arg, []byte(",")) {
		if len(tok) == 0 {
			continue
		}
		id, ok := protocol.ParseUint32(tok)
		if !ok || id < 1 || id >= maxCrawlClass {
			return protocol.ReplyBadClass
		}
		n++
	}
	if n == 0 {
		return protocol.ReplyNotStarted
	}
	h.count(CrawlerStarts, 1)
	return "OK"
}

// lruCmd answers "lru mode flat|segmented", "lru temp_ttl <ttl>" and "lru
// tune <hot pct> <warm pct> <hot factor> <warm factor>": memcached's checks
// and replies, without effect. As in memcached, OK honours a trailing
// noreply and errors do not.
func (h *Handler) lruCmd(r *protocol.Request, out []byte) []byte {
	args := r.Args
	line := protocol.ReplyError
	switch {
	case len(args) >= 5 && string(args[0]) == "tune":
		hot, ok1 := protocol.ParseUint32(args[1])
		warm, ok2 := protocol.ParseUint32(args[2])
		hotFactor, err3 := strconv.ParseFloat(string(args[3]), 64)
		factor, err4 := strconv.ParseFloat(string(args[4]), 64)
		switch {
		case !ok1 || !ok2 || err3 != nil || err4 != nil:
		case uint64(hot)+uint64(warm) > 80:
			line = replyLruPcts
		case factor <= 0 || hotFactor <= 0:
			line = replyLruFactors
		default:
			line = "OK"
		}
	case len(args) >= 2 && string(args[0]) == "mode":
		if string(args[1]) == "flat" || string(args[1]) == "segmented" {
			line = "OK"
		}
	case len(args) >= 2 && string(args[0]) == "temp_ttl":
		if _, err := strconv.ParseInt(string(args[1]), 10, 32); err == nil {
			line = "OK"
		}
	}
	if line == "OK" && noreplyLast(args) {
		return out
	}
	return appendLine(out, line)
}
