package handler

import (
	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

var storeModes = [...]cache.StoreMode{
	protocol.CmdSet:     cache.Set,
	protocol.CmdAdd:     cache.Add,
	protocol.CmdReplace: cache.Replace,
	protocol.CmdAppend:  cache.Append,
	protocol.CmdPrepend: cache.Prepend,
	protocol.CmdCas:     cache.CAS,
}

// execute runs one request; cfd is the connection's descriptor, which the
// lines of the watch command name.
func (h *Handler) execute(r *protocol.Request, out []byte, cfd int) ([]byte, bool) {
	c := h.cfg.Cache
	switch r.Cmd {
	case protocol.CmdGet, protocol.CmdGets, protocol.CmdGat, protocol.CmdGats:
		return h.retrieve(r, out, cfd), false
	case protocol.CmdSet, protocol.CmdAdd, protocol.CmdReplace, protocol.CmdAppend, protocol.CmdPrepend, protocol.CmdCas:
		if h.prefixes.on() {
			h.prefixes.recordSet(r.Key)
		}
		outcome, _ := c.Store(storeModes[r.Cmd], r.Key, r.Data, r.Flags, r.Exptime, r.CAS)
		if h.watch.on(watchMutations) {
			h.watchStore(cfd, storeModeNames[storeModes[r.Cmd]], r.Key, storeStatus(outcome), r.Exptime, r.Flags, len(r.Data))
		}
		return reply(out, r.Noreply, storeReply(outcome)), false
	case protocol.CmdDelete:
		if h.prefixes.on() {
			h.prefixes.recordDelete(r.Key)
		}
		outcome := c.Delete(r.Key)
		if h.watch.on(watchFetchers) {
			h.watchGet(cfd, r.Key, outcome == cache.Deleted, false, 0, 0)
		}
		return reply(out, r.Noreply, storeReply(outcome)), false
	case protocol.CmdTouch:
		outcome := c.Touch(r.Key, r.Exptime)
		if h.watch.on(watchFetchers) {
			h.watchGet(cfd, r.Key, outcome == cache.Touched, false, 0, 0)
		}
		return reply(out, r.Noreply, storeReply(outcome)), false
	case protocol.CmdIncr, protocol.CmdDecr:
		v, outcome := c.Arith(r.Key, r.Cmd == protocol.CmdIncr, r.Delta)
		if h.watch.on(watchFetchers) {
			h.watchGet(cfd, r.Key, outcome != cache.NotFound, false, 0, 0)
		}
		if outcome == cache.Stored {
			if r.Noreply {
				return out, false
			}
			return protocol.AppendUint(out, v), false
		}
		return reply(out, r.Noreply, storeReply(outcome)), false
	case protocol.CmdFlushAll:
		return h.flushAll(r, out), false
	case protocol.CmdVersion:
		return protocol.AppendVersion(out, Version), false
	case protocol.CmdVerbosity:
		h.setVerbosity(int(min(r.Delta, 1<<20)))
		return reply(out, r.Noreply, protocol.RespOK), false
	case protocol.CmdStats:
		return h.stats(r, out), false
	case protocol.CmdQuit:
		return out, true
	case protocol.CmdShutdown:
		if !h.cfg.EnableShutdown {
			return reply(out, r.Noreply, protocol.ReplyShutdownDisabled+"\r\n"), false
		}
		// memcached: "shutdown" or "shutdown graceful", nothing else
		// (memcached 1.6.45 honours a last noreply on the refusal).
		if len(r.Args) > 1 || (len(r.Args) == 1 && string(r.Args[0]) != "graceful") {
			return reply(out, r.Noreply, protocol.ReplyShutdownMode+"\r\n"), false
		}
		if h.cfg.OnShutdown != nil && h.shutdownOnce.CompareAndSwap(false, true) {
			go h.cfg.OnShutdown()
		}
		return out, true
	case protocol.CmdMetaGet, protocol.CmdMetaSet, protocol.CmdMetaDelete, protocol.CmdMetaArithmetic, protocol.CmdMetaDebug:
		return h.metaExec(r, out, cfd), false
	case protocol.CmdMetaNoop:
		return append(out, "MN\r\n"...), false
	case protocol.CmdBinary:
		return h.binary(r, out)
	case protocol.CmdSlabs:
		return h.slabsCmd(r, out), false
	case protocol.CmdLru:
		return h.lruCmd(r, out), false
	case protocol.CmdCacheMemlimit:
		return h.cacheMemlimit(r, out), false
	case protocol.CmdTextAuth:
		return h.textAuth(r, out), false
	case protocol.CmdRefreshCerts:
		return h.refreshCerts(r, out), false
	case protocol.CmdError:
		return h.protocolError(r, out)
	}
	return append(out, protocol.RespError...), false
}

// retrieve answers get, gets, gat and gats.
func (h *Handler) retrieve(r *protocol.Request, out []byte, cfd int) []byte {
	opt := cache.GetOptions{}
	if r.Cmd == protocol.CmdGat || r.Cmd == protocol.CmdGats {
		opt.Touch, opt.Exptime = true, r.Exptime
	}
	var a cache.Appender = valueAppender{}
	if r.Cmd == protocol.CmdGets || r.Cmd == protocol.CmdGats {
		a = casAppender{}
	}
	detail := h.prefixes.on()
	watch := h.watch.on(watchFetchers)
	for _, k := range r.Keys {
		var hit bool
		if watch {
			var seen seenItem
			out, hit = h.cfg.Cache.Get(out, k, opt, seenAppender{a, &seen})
			h.watchGet(cfd, k, hit, true, seen.flags, seen.nvalue)
		} else {
			out, hit = h.cfg.Cache.Get(out, k, opt, a)
		}
		if detail {
			h.prefixes.recordGet(k, hit)
		}
	}
	return append(out, protocol.RespEnd...)
}

// flushAll answers flush_all [delay] [noreply]; the parser has already
// read the delay with memcached's number rules into r.Exptime. A flush_all
// refused by -F still counts in cmd_flush, as in memcached.
func (h *Handler) flushAll(r *protocol.Request, out []byte) []byte {
	if h.cfg.DisableFlushAll {
		h.cfg.Cache.RecordFlushCmd()
		return reply(out, r.Noreply, protocol.ReplyFlushDisabled+"\r\n")
	}
	h.cfg.Cache.FlushAll(r.Exptime)
	return reply(out, r.Noreply, protocol.RespOK)
}

// protocolError writes the reply of a request that failed to parse.
func (h *Handler) protocolError(r *protocol.Request, out []byte) ([]byte, bool) {
	e := r.Err
	if e == nil {
		return append(out, protocol.RespError...), false
	}
	if e.Kind == protocol.ErrTooLarge && isStorage(r.FailedCmd) && len(r.Key) > 0 {
		h.cfg.Cache.RejectTooLarge(storeModes[r.FailedCmd], r.Key)
	}
	if e.Kind == protocol.ErrBadChunk && (isStorage(r.FailedCmd) || r.FailedCmd == protocol.CmdMetaSet) {
		// memcached counts cmd_set once it has read the data, before it
		// checks how the data ends.
		h.badChunkSets.Add(1)
	}
	if isStorage(r.FailedCmd) && (e.Kind == protocol.ErrTooLarge || e.Kind == protocol.ErrBadChunk) && h.prefixes.on() {
		// memcached counts the set once the line is valid, before it
		// allocates the item or reads the data.
		h.prefixes.recordSet(r.Key)
	}
	if isRetrieval(r.FailedCmd) && len(r.Keys) > 0 {
		// memcached looked up (and for gat touched) the keys before the bad
		// one; their values are dropped from the reply.
		h.discardLookups(r)
	}
	if r.FailedCmd == protocol.CmdFlushAll {
		// memcached counts every flush_all it recognises, and checks -F
		// before it parses the delay.
		h.cfg.Cache.RecordFlushCmd()
		if h.cfg.DisableFlushAll {
			return reply(out, r.Noreply, protocol.ReplyFlushDisabled+"\r\n"), false
		}
	}
	if e.Silent && r.Noreply {
		return out, e.Close
	}
	return protocol.AppendError(out, e), e.Close
}

func isRetrieval(c protocol.Command) bool {
	return c >= protocol.CmdGet && c <= protocol.CmdGats
}

// discardLookups performs a failed retrieval's lookups for their side
// effects only.
func (h *Handler) discardLookups(r *protocol.Request) {
	opt := cache.GetOptions{}
	if r.FailedCmd == protocol.CmdGat || r.FailedCmd == protocol.CmdGats {
		opt.Touch, opt.Exptime = true, r.Exptime
	}
	var scratch [0]byte
	detail := h.prefixes.on()
	for _, k := range r.Keys {
		_, hit := h.cfg.Cache.Get(scratch[:0:0], k, opt, discardAppender{})
		if detail {
			h.prefixes.recordGet(k, hit)
		}
	}
}

// discardAppender drops a hit's bytes.
type discardAppender struct{}

func (discardAppender) AppendItem(dst []byte, _ cache.Item) []byte { return dst }

func isStorage(c protocol.Command) bool {
	return c >= protocol.CmdSet && c <= protocol.CmdCas
}

// storeReply maps a cache outcome to its full reply line.
func storeReply(o cache.Outcome) string {
	switch o {
	case cache.Stored:
		return protocol.RespStored
	case cache.NotStored:
		return protocol.RespNotStored
	case cache.Exists:
		return protocol.RespExists
	case cache.NotFound:
		return protocol.RespNotFound
	case cache.Deleted:
		return protocol.RespDeleted
	case cache.Touched:
		return protocol.RespTouched
	case cache.TooLarge:
		return protocol.ReplyTooLarge + "\r\n"
	case cache.NoMemory:
		return protocol.ReplyOutOfMemoryStore + "\r\n"
	case cache.NonNumeric:
		return protocol.ReplyNonNumeric + "\r\n"
	}
	return protocol.ReplyError + "\r\n"
}

// refreshCerts answers refresh_certs as memcached 1.6.18 (built with TLS,
// as Debian's is) does: OK, or the line naming what failed to load ("Error
// TLS not enabled" without -Z). noreply silences OK only: memcached writes
// the error line anyway.
func (h *Handler) refreshCerts(r *protocol.Request, out []byte) []byte {
	msg := "Error TLS not enabled"
	if h.cfg.RefreshCerts != nil {
		msg = h.cfg.RefreshCerts()
	}
	if msg == "" {
		return reply(out, r.Noreply, protocol.RespOK)
	}
	return appendLine(out, msg)
}

// reply appends a full reply line unless the request asked for no reply.
func reply(out []byte, noreply bool, line string) []byte {
	if noreply {
		return out
	}
	return append(out, line...)
}

// appendLine appends an error line (no CRLF) and CRLF.
func appendLine(out []byte, line string) []byte {
	out = append(out, line...)
	return append(out, "\r\n"...)
}

// seenItem is what the watch command's item_get line tells of a hit.
type seenItem struct {
	flags  uint64
	nvalue int
}

// seenAppender notes a hit's flags and value length for the watch command,
// then appends it with a.
type seenAppender struct {
	a    cache.Appender
	seen *seenItem
}

func (s seenAppender) AppendItem(dst []byte, it cache.Item) []byte {
	s.seen.flags, s.seen.nvalue = it.Flags, len(it.Value)
	return s.a.AppendItem(dst, it)
}
