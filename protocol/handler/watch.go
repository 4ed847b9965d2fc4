package handler

import (
	"cmp"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// The watch command: memcached 1.6.18's log streaming. "watch [flags...]"
// turns the connection into a stream: "OK", then one line per event the
// flags select, in memcached's format (its logger.c), each ending in "\n":
//
//	ts=<sec>.<usec> gid=<n> type=item_get key=<k> status=found|not_found clsid=<c> cfd=<fd> size=<n>
//	ts=... gid=... type=item_store key=<k> status=<s> cmd=<set|add|...> ttl=<n> clsid=<c> cfd=<fd> size=<n>
//	ts=... gid=... type=conn_new rip=<ip> rport=<port> transport=tcp|local cfd=<fd>
//	ts=... gid=... type=conn_close rip=<ip> rport=<port> transport=tcp|local reason=normal cfd=<fd>
//
// fetchers selects item_get (every key a classic or meta command looks up),
// mutations item_store (classic storage commands and ms), connevents
// conn_new and conn_close, evictions the items the cache evicts (through its
// OnEvict hook, WatchEviction); the binary protocol is not logged. rawcmds,
// sysevents and the proxy flags are accepted, as memcached accepts them, but
// produce nothing: tandem has neither memcached's raw command log, its
// background threads nor its proxy. A watcher whose client does not keep up loses lines, counted in
// log_watcher_skipped and announced to it by a "skipped=<n>" line, as in
// memcached. Input on a watching connection is read and ignored.
//
// Costs: with no watcher, one atomic load per request. With one, each event
// formats a line and takes a read lock shared by every connection.

// Watch flags, memcached's LOG_* for the names the command takes.
const (
	watchRawcmds uint32 = 1 << iota
	watchEvictions
	watchFetchers
	watchMutations
	watchSysevents
	watchConnevents
	watchProxy // proxyreqs, proxyevents, proxyuser
)

// watchFlagNames maps watch's arguments to flags.
var watchFlagNames = map[string]uint32{
	"rawcmds": watchRawcmds, "evictions": watchEvictions, "fetchers": watchFetchers,
	"mutations": watchMutations, "sysevents": watchSysevents, "connevents": watchConnevents,
	"proxyreqs": watchProxy, "proxyevents": watchProxy, "proxyuser": watchProxy,
}

const (
	// watcherLimit is memcached's WATCHER_LIMIT.
	watcherLimit = 20
	// watcherBufSize is the lines a watcher may have waiting (memcached's
	// watcher_logbuf_size default); beyond it lines are skipped.
	watcherBufSize = 256 << 10
	// watcherPollEvery is how often a watcher whose connection has more
	// than watcherBufSize queued looks again whether it drained.
	watcherPollEvery = 10 * time.Millisecond
)

// Replies of watch.
const (
	replyWatchDisabled  = "CLIENT_ERROR watch commands not allowed"
	replyWatchPipelined = "ERROR cannot pipeline other commands before watch"
	replyWatchTooMany   = "WATCHER_TOO_MANY log watcher limit reached"
	replyWatchFailed    = "WATCHER_FAILED failed to add log watcher"
)

// logBroker hands events to the watchers.
type logBroker struct {
	mask atomic.Uint32 // atomic: the union of the watchers' flags
	gid  atomic.Uint64 // atomic: the last line's gid

	// Counters for "stats": log_watcher_sent, log_watcher_skipped,
	// log_worker_written (events formatted).
	sent, skipped, written atomic.Uint64

	mu       sync.RWMutex
	watchers []*watcher // guarded by mu
}

// watcher is one watching connection.
type watcher struct {
	flags uint32
	push  func([]byte) (int, error)
	wake  chan struct{} // buffered 1: lines are waiting
	quit  chan struct{} // closed when the watcher is removed

	mu      sync.Mutex
	buf     []byte // guarded by mu: lines not yet pushed
	spare   []byte // guarded by mu: a pushed buffer for reuse
	skipped uint64 // guarded by mu: lines dropped since the last one sent
}

// on reports whether some watcher wants events of flag.
func (b *logBroker) on(flag uint32) bool { return b.mask.Load()&flag != 0 }

// add registers a watcher; it fails at the limit. Lines for it are
// buffered from then on; start begins pushing them.
func (b *logBroker) add(w *watcher) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.watchers) >= watcherLimit {
		return false
	}
	b.watchers = append(b.watchers, w)
	b.setMaskLocked()
	return true
}

// start runs w's goroutine, which pushes its lines until w is removed.
func (b *logBroker) start(w *watcher) { go b.run(w) }

// remove unregisters w and stops its goroutine; removing twice is harmless.
func (b *logBroker) remove(w *watcher) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.watchers {
		if x == w {
			b.watchers = append(b.watchers[:i], b.watchers[i+1:]...)
			b.setMaskLocked()
			close(w.quit)
			return
		}
	}
}

func (b *logBroker) setMaskLocked() {
	var m uint32
	for _, w := range b.watchers {
		m |= w.flags
	}
	b.mask.Store(m)
}

// count is log_watchers.
func (b *logBroker) count() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.watchers)
}

// emit hands line (without the "ts=... gid=... " prefix, which emit adds)
// to every watcher of flag.
func (b *logBroker) emit(flag uint32, line []byte) {
	var prefix [64]byte
	now := time.Now()
	p := append(prefix[:0], "ts="...)
	p = strconv.AppendInt(p, now.Unix(), 10)
	p = append(p, '.')
	// memcached prints tv_usec with %d: not zero-padded.
	p = strconv.AppendInt(p, int64(now.Nanosecond()/1000), 10)
	p = append(p, " gid="...)
	p = strconv.AppendUint(p, b.gid.Add(1), 10)
	p = append(p, ' ')
	b.written.Add(1)
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, w := range b.watchers {
		if w.flags&flag == 0 {
			continue
		}
		w.mu.Lock()
		if len(w.buf)+len(p)+len(line)+32 > watcherBufSize {
			w.skipped++
			w.mu.Unlock()
			b.skipped.Add(1)
			continue
		}
		if w.skipped > 0 {
			w.buf = strconv.AppendUint(append(w.buf, "skipped="...), w.skipped, 10)
			w.buf = append(w.buf, '\n')
			w.skipped = 0
		}
		w.buf = append(append(w.buf, p...), line...)
		w.mu.Unlock()
		b.sent.Add(1)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// run pushes w's lines to its connection until w is removed or the
// connection is gone. While the connection has more than watcherBufSize
// queued for a peer that does not read, it waits (polling), and emit drops
// the lines that do not fit meanwhile.
func (b *logBroker) run(w *watcher) {
	for {
		select {
		case <-w.quit:
			return
		case <-w.wake:
		}
		for {
			queued, err := w.push(nil)
			if err != nil {
				b.remove(w)
				return
			}
			if queued > watcherBufSize {
				select {
				case <-w.quit:
					return
				case <-time.After(watcherPollEvery):
				}
				continue
			}
			w.mu.Lock()
			out := w.buf
			w.buf, w.spare = w.spare[:0], nil
			w.mu.Unlock()
			if len(out) == 0 {
				break
			}
			if _, err := w.push(out); err != nil {
				b.remove(w)
				return
			}
			w.mu.Lock()
			w.spare = out[:0]
			w.mu.Unlock()
		}
	}
}

// SetPush implements the reactor's Pusher: the connection's descriptor and
// its push, which watch needs. It also reports the connection's opening to
// connevents watchers.
func (s *Session) SetPush(fd int, push func(p []byte) (queued int, err error)) {
	s.fd, s.push = fd, push
	if s.h.watch.on(watchConnevents) {
		s.h.watch.emit(watchConnevents, s.appendConnEvent(nil, "conn_new"))
	}
}

// watchCmd answers watch: it parses the flags as memcached does, then
// sends "OK" through push (after every earlier reply) and starts the
// watcher. A request with earlier replies of the same batch not yet
// written is refused, as memcached refuses a pipelined watch.
//
// noreply is no watch flag: "watch noreply" is ERROR, as in memcached 1.6.45
// (newer.go: "watch noreply"; 1.6.18 was silent).
func (s *Session) watchCmd(r *protocol.Request, out []byte) []byte {
	fail := func(line string) []byte { return appendLine(out, line) }
	if s.h.cfg.DisableWatch {
		return fail(replyWatchDisabled)
	}
	if len(out) > 0 {
		return fail(replyWatchPipelined)
	}
	flags := watchFetchers
	if len(r.Args) > 0 {
		flags = 0
		for _, a := range r.Args {
			f, ok := watchFlagNames[string(a)]
			if !ok {
				return fail(protocol.ReplyError)
			}
			flags |= f
		}
	}
	if s.push == nil {
		return fail(replyWatchFailed)
	}
	w := &watcher{flags: flags, push: s.push, wake: make(chan struct{}, 1), quit: make(chan struct{})}
	if !s.h.watch.add(w) {
		return fail(replyWatchTooMany)
	}
	// OK goes out through push before the watcher's goroutine starts, so
	// that no line can overtake it; lines of events meanwhile wait in its
	// buffer.
	if _, err := s.push([]byte(protocol.RespOK)); err != nil {
		s.h.watch.remove(w)
		return out
	}
	s.h.watch.start(w)
	s.watcher = w
	return out
}

// closeWatch ends the session's watcher, if any, and reports the close.
func (s *Session) closeWatch() {
	if s.watcher != nil {
		s.h.watch.remove(s.watcher)
		s.watcher = nil
	}
	if s.push != nil && s.h.watch.on(watchConnevents) {
		s.h.watch.emit(watchConnevents, s.appendConnEvent(nil, "conn_close"))
	}
}

// appendConnEvent formats conn_new or conn_close (the latter always with
// reason=normal: the session does not learn why its connection closed).
func (s *Session) appendConnEvent(dst []byte, typ string) []byte {
	rip, rport, transport := "unix", "0", "local"
	if host, port, err := net.SplitHostPort(s.peer); err == nil {
		rip, rport, transport = host, port, "tcp"
	}
	dst = append(dst, "type="...)
	dst = append(dst, typ...)
	dst = append(append(dst, " rip="...), rip...)
	dst = append(append(dst, " rport="...), rport...)
	dst = append(append(dst, " transport="...), transport...)
	if typ == "conn_close" {
		dst = append(dst, " reason=normal"...)
	}
	dst = strconv.AppendInt(append(dst, " cfd="...), int64(s.fd), 10)
	return append(dst, '\n')
}

// Item events. memcached logs the fetch of every key a command looks up and
// the outcome of every store; tandem logs them where the handler meets the
// cache, with memcached's slab class for an item of that size (as "me"
// reports it).

// watchGet reports one key lookup: found with the item's flags and value
// length, or not found. known is false where the cache reports only the
// outcome (delete, touch, incr/decr): clsid and size are then 0.
func (h *Handler) watchGet(cfd int, key []byte, found, known bool, flags uint64, nvalue int) {
	var buf [512]byte
	b := append(buf[:0], "type=item_get key="...)
	b = protocol.AppendURIEncoded(b, key)
	clsid, size := 0, 0
	if found {
		b = append(b, " status=found"...)
		if known {
			clsid, size = slabClass(h.itemTotal(len(key), flags, nvalue)), nvalue
		}
	} else {
		b = append(b, " status=not_found"...)
	}
	b = strconv.AppendInt(append(b, " clsid="...), int64(clsid), 10)
	b = strconv.AppendInt(append(b, " cfd="...), int64(cfd), 10)
	b = strconv.AppendInt(append(b, " size="...), int64(size), 10)
	h.watch.emit(watchFetchers, append(b, '\n'))
}

// WatchEviction reports an item the cache evicted to "watch evictions" watchers, in memcached's
// format: fetch=yes|no, ttl the seconds it had left (-1: none), la the seconds since its last
// access. It is the cache's OnEvict hook and runs under a shard lock: with no watcher it costs one
// atomic load.
func (h *Handler) WatchEviction(it *cache.Item) {
	if !h.watch.on(watchEvictions) {
		return
	}
	var buf [512]byte
	b := append(buf[:0], "type=eviction key="...)
	b = protocol.AppendURIEncoded(b, it.Key)
	b = append(b, " fetch="...)
	if it.Fetched {
		b = append(b, "yes"...)
	} else {
		b = append(b, "no"...)
	}
	ttl := int64(-1)
	if it.Exptime != 0 {
		ttl = it.Exptime - it.Now
	}
	b = strconv.AppendInt(append(b, " ttl="...), ttl, 10)
	b = strconv.AppendInt(append(b, " la="...), it.Now-it.LastAccess, 10)
	b = strconv.AppendInt(append(b, " clsid="...), int64(slabClass(h.itemTotal(len(it.Key), it.Flags, len(it.Value)))), 10)
	b = strconv.AppendInt(append(b, " size="...), int64(len(it.Value)), 10)
	h.watch.emit(watchEvictions, append(b, '\n'))
}

// storeModeNames name a store's mode as memcached's item_store line does
// (ms names its mode the same way).
var storeModeNames = [...]string{
	cache.Set: "set", cache.Add: "add", cache.Replace: "replace",
	cache.Append: "append", cache.Prepend: "prepend", cache.CAS: "cas",
}

// watchStore reports a store of value length nvalue: its outcome's status,
// the command, the TTL in seconds (0 for none), memcached's class and the
// value length (for append and prepend, the appended bytes: the cache does
// not report the combined length).
func (h *Handler) watchStore(cfd int, cmd string, key []byte, status string, exptime int64, flags uint64, nvalue int) {
	var buf [512]byte
	b := append(buf[:0], "type=item_store key="...)
	b = protocol.AppendURIEncoded(b, key)
	b = append(append(b, " status="...), status...)
	b = append(append(b, " cmd="...), cmp.Or(cmd, "set")...)
	b = strconv.AppendUint(append(b, " ttl="...), uint64(watchTTL(exptime, h.cfg.Now().Unix())), 10)
	b = strconv.AppendInt(append(b, " clsid="...), int64(slabClass(h.itemTotal(len(key), flags, nvalue))), 10)
	b = strconv.AppendInt(append(b, " cfd="...), int64(cfd), 10)
	b = strconv.AppendInt(append(b, " size="...), int64(nvalue), 10)
	h.watch.emit(watchMutations, append(b, '\n'))
}

// watchTTL is the ttl field of item_store: seconds until the item expires
// (memcached prints it as an unsigned 32-bit number), 0 for none.
func watchTTL(exptime, now int64) uint32 {
	const maxRelative = 60 * 60 * 24 * 30 // memcached's REALTIME_MAXDELTA
	switch {
	case exptime == 0:
		return 0
	case exptime < 0:
		return uint32(int32(-now)) // already expired: memcached wraps too
	case exptime <= maxRelative:
		return uint32(exptime)
	}
	return uint32(int32(exptime - now))
}

// storeStatus maps a store outcome to item_store's status.
func storeStatus(o cache.Outcome) string {
	switch o {
	case cache.Stored:
		return "stored"
	case cache.Exists:
		return "exists"
	case cache.NotFound:
		return "not_found"
	case cache.TooLarge:
		return "too_large"
	case cache.NoMemory:
		return "no_memory"
	}
	return "not_stored"
}
