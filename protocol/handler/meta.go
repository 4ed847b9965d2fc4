package handler

import (
	"strconv"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// This file executes the meta commands as memcached 1.6.45 does, with the
// flags it added since 1.6.18 (E, md x, ms s and N in append mode, mg C; see
// transcript.Differences): return flags in request order, Z X W after them,
// q hiding only the uninteresting replies (mg EN, ms/md HD, ma HD/VA).

// metaKeyBuf holds a decoded base64 key (at most 3/4 of MaxKeyLen bytes).
type metaKeyBuf [protocol.MaxKeyLen]byte

// metaExec runs one meta command on the key r names: the key token, or with
// flag b its decoding (the parser has checked that it decodes). The decoding
// buffer lives on the stack and is only set up for b, so the common path
// does not pay for clearing it.
func (h *Handler) metaExec(r *protocol.Request, out []byte, cfd int) []byte {
	if !r.Meta.Has('b') {
		return h.metaRun(r, r.Key, out, cfd)
	}
	var buf metaKeyBuf
	return h.metaRun(r, buf[:protocol.DecodeBase64Key(buf[:], r.Key)], out, cfd)
}

func (h *Handler) metaRun(r *protocol.Request, key, out []byte, cfd int) []byte {
	switch r.Cmd {
	case protocol.CmdMetaGet:
		return h.metaGet(r, key, out, cfd)
	case protocol.CmdMetaSet:
		return h.metaSet(r, key, out, cfd)
	case protocol.CmdMetaDelete:
		return h.metaDelete(r, key, out, cfd)
	case protocol.CmdMetaArithmetic:
		return h.metaArith(r, key, out, cfd)
	}
	return h.metaDebug(r, key, out)
}

// appendMetaKey appends a k return flag: " k<key>", or for a binary key
// " k<base64> b".
func appendMetaKey(dst, key []byte, binary bool) []byte {
	dst = append(dst, " k"...)
	if !binary {
		return append(dst, key...)
	}
	dst = protocol.AppendBase64(dst, key)
	return append(dst, " b"...)
}

// appendOpaqueKey appends the O and k return flags in request order, the
// only ones memcached returns with a miss or an error code.
func appendOpaqueKey(dst []byte, m *protocol.MetaArgs, key []byte) []byte {
	for _, f := range m.Order() {
		switch f {
		case 'O':
			dst = append(dst, ' ')
			dst = append(dst, m.Opaque...)
		case 'k':
			dst = appendMetaKey(dst, key, m.Has('b'))
		}
	}
	return dst
}

// flagBefore reports whether flag a comes before flag b in order.
func flagBefore(order []byte, a, b byte) bool {
	for _, f := range order {
		switch f {
		case a:
			return true
		case b:
			return false
		}
	}
	return false
}

// appendTTL appends the remaining TTL of an item whose absolute exptime is
// exp at time now, as memcached prints it: -1 for none, else the unsigned
// 32-bit difference.
func appendTTL(dst []byte, exp, now int64) []byte {
	if exp == 0 {
		return append(dst, "-1"...)
	}
	return strconv.AppendUint(dst, uint64(uint32(exp-now)), 10)
}

// metaGet answers mg.
func (h *Handler) metaGet(r *protocol.Request, key, out []byte, cfd int) []byte {
	m := &r.Meta
	opt := cache.MetaGetOptions{NoBump: m.Has('u')}
	if m.Has('T') {
		opt.Touch, opt.TouchExptime = true, r.Exptime
	}
	if m.Has('N') {
		opt.Vivify, opt.VivifyExpt = true, m.VivifyTTL
		opt.NewCAS = m.NewCAS
	}
	if m.Has('R') {
		opt.Recache, opt.RecacheExpt = true, m.RecacheTTL
	}
	if opt.Touch && (opt.Vivify || opt.Recache) {
		opt.TouchThenRecache = flagBefore(m.Order(), 'T', 'R')
		opt.VivifyLast = flagBefore(m.Order(), 'T', 'N')
	}
	start := len(out)
	var hit bool
	if h.watch.on(watchFetchers) {
		var seen seenItem
		out, hit = h.cfg.Cache.MetaGet(out, key, opt, seenAppender{mgAppender{r}, &seen})
		h.watchGet(cfd, key, hit, true, seen.flags, seen.nvalue)
	} else {
		out, hit = h.cfg.Cache.MetaGet(out, key, opt, mgAppender{r})
	}
	switch {
	case m.OpaqueTooLong:
		// memcached notices while writing the reply, after the lookup.
		return appendLine(out[:start], protocol.ReplyOpaqueTooLong)
	case hit || r.Noreply:
		return out
	}
	out = appendOpaqueKey(append(out, "EN"...), m, key)
	return append(out, "\r\n"...)
}

// mgAppender writes an mg hit. It holds only a pointer, so passing it as a
// cache.Appender does not allocate.
type mgAppender struct{ r *protocol.Request }

func (a mgAppender) AppendItem(dst []byte, it cache.Item) []byte {
	m := &a.r.Meta
	// memcached 1.6.45: with C, an item whose CAS id is C's is not sent
	// again (the client has it).
	value := m.Has('v') && !(m.Has('C') && it.CAS == a.r.CAS)
	if value {
		dst = append(dst, "VA "...)
		dst = strconv.AppendInt(dst, int64(len(it.Value)), 10)
	} else {
		dst = append(dst, "HD"...)
	}
	exp := it.Exptime // T and N change it where they stand in the request
	for _, f := range m.Order() {
		switch f {
		case 'T':
			exp = cache.StoredExptime(a.r.Exptime, it.Now)
		case 'N':
			if it.Created {
				exp = cache.StoredExptime(m.VivifyTTL, it.Now)
			}
		case 's':
			dst = append(dst, " s"...)
			dst = strconv.AppendInt(dst, int64(len(it.Value)), 10)
		case 't':
			dst = appendTTL(append(dst, " t"...), exp, it.Now)
		case 'c':
			dst = strconv.AppendUint(append(dst, " c"...), it.CAS, 10)
		case 'f':
			dst = strconv.AppendUint(append(dst, " f"...), uint64(it.Flags), 10)
		case 'l':
			dst = strconv.AppendUint(append(dst, " l"...), uint64(uint32(it.Now-it.LastAccess)), 10)
		case 'h':
			if it.Fetched {
				dst = append(dst, " h1"...)
			} else {
				dst = append(dst, " h0"...)
			}
		case 'O':
			dst = append(dst, ' ')
			dst = append(dst, m.Opaque...)
		case 'k':
			dst = appendMetaKey(dst, it.Key, it.KeyBinary)
		}
	}
	if it.WinSentBefore {
		dst = append(dst, " Z"...)
	}
	if it.Stale {
		dst = append(dst, " X"...)
	}
	if it.Win {
		dst = append(dst, " W"...)
	}
	dst = append(dst, "\r\n"...)
	if value {
		dst = append(dst, it.Value...)
		dst = append(dst, "\r\n"...)
	}
	return dst
}

// metaStoreMode maps ms's M token (and C) to a cache store mode.
func metaStoreMode(m *protocol.MetaArgs) cache.StoreMode {
	mode := cache.Set
	switch m.Mode {
	case 'E':
		mode = cache.Add
	case 'A':
		mode = cache.Append
	case 'P':
		mode = cache.Prepend
	case 'R':
		mode = cache.Replace
	}
	if m.Has('C') && (mode == cache.Set || mode == cache.Replace) {
		mode = cache.CAS
	}
	return mode
}

// metaSet answers ms.
func (h *Handler) metaSet(r *protocol.Request, key, out []byte, cfd int) []byte {
	m := &r.Meta
	if m.TooLarge {
		// memcached unlinks the key whatever the mode.
		h.cfg.Cache.RejectTooLarge(cache.Set, key)
		return appendLine(out, protocol.ReplyTooLarge)
	}
	mode := metaStoreMode(m)
	var cas uint64
	if m.Has('C') {
		cas = r.CAS
	}
	var size int
	opt := cache.MetaStoreOptions{Invalidate: m.Has('I') && mode == cache.CAS, KeyBinary: m.Has('b'), NewCAS: m.NewCAS}
	if m.Has('s') {
		opt.ValueLen = &size
	}
	outcome, id := h.cfg.Cache.MetaStore(mode, key, r.Data, r.Flags, r.Exptime, cas, opt)
	for try := 0; try < 3 && outcome == cache.NotStored && m.Has('N') && (mode == cache.Append || mode == cache.Prepend); try++ {
		// memcached 1.6.45: N in append or prepend mode stores a missing
		// item as set would, with N's TTL; memcached does both under one
		// item lock. Here they are two calls: when another client stores
		// the key in between, the add fails and the append is tried again
		// (a key deleted and stored again between every try still ends NS).
		if outcome, id = h.cfg.Cache.MetaStore(cache.Add, key, r.Data, r.Flags, m.VivifyTTL, 0, opt); outcome == cache.NotStored {
			outcome, id = h.cfg.Cache.MetaStore(mode, key, r.Data, r.Flags, r.Exptime, cas, opt)
		}
	}
	if h.watch.on(watchMutations) {
		h.watchStore(cfd, storeModeNames[mode], key, storeStatus(outcome), r.Exptime, r.Flags, len(r.Data))
	}
	switch outcome {
	case cache.Stored:
		if r.Noreply {
			return out
		}
		out = append(out, "HD"...)
	case cache.NotStored:
		out = append(out, "NS"...)
	case cache.Exists:
		out = append(out, "EX"...)
	case cache.NotFound:
		out = append(out, "NF"...)
	case cache.TooLarge:
		return appendLine(out, protocol.ReplyTooLarge)
	case cache.NoMemory:
		return appendLine(out, protocol.ReplyOutOfMemoryStore)
	default:
		return appendLine(out, protocol.ReplyUnhandledStore)
	}
	if outcome != cache.Stored {
		id = 0
	}
	for _, f := range m.Order() {
		switch f {
		case 'O':
			out = append(out, ' ')
			out = append(out, m.Opaque...)
		case 'k':
			out = appendMetaKey(out, key, m.Has('b'))
		case 'c':
			out = strconv.AppendUint(append(out, " c"...), id, 10)
		case 's':
			// memcached 1.6.45: the stored item's size; when not stored,
			// the size of the value sent.
			if outcome != cache.Stored {
				size = len(r.Data)
			}
			out = strconv.AppendInt(append(out, " s"...), int64(size), 10)
		}
	}
	return append(out, "\r\n"...)
}

// metaDelete answers md.
func (h *Handler) metaDelete(r *protocol.Request, key, out []byte, cfd int) []byte {
	m := &r.Meta
	outcome := h.cfg.Cache.MetaDelete(key, cache.MetaDeleteOptions{
		CompareCAS: m.Has('C'), CAS: r.CAS,
		Invalidate: m.Has('I'), Touch: m.Has('T'), Exptime: r.Exptime,
		NewCAS: m.NewCAS, RemoveValue: m.Has('x'), Flags: r.Flags,
	})
	if h.watch.on(watchFetchers) {
		h.watchGet(cfd, key, outcome != cache.NotFound, false, 0, 0)
	}
	switch outcome {
	case cache.Deleted:
		if r.Noreply {
			return out
		}
		out = append(out, "HD"...)
	case cache.Exists:
		out = append(out, "EX"...)
	case cache.NoMemory:
		return appendLine(out, protocol.ReplyOutOfMemory)
	default:
		out = append(out, "NF"...)
	}
	return append(appendOpaqueKey(out, m, key), "\r\n"...)
}

// metaArith answers ma.
func (h *Handler) metaArith(r *protocol.Request, key, out []byte, cfd int) []byte {
	m := &r.Meta
	opt := cache.MetaArithOptions{
		Vivify: m.Has('N'), Initial: m.Initial, VivifyExpt: m.VivifyTTL,
		Touch: m.Has('T'), Exptime: r.Exptime,
		VivifyLast: flagBefore(m.Order(), 'T', 'N'),
		NewCAS:     m.NewCAS,
	}
	if m.Has('C') {
		opt.CAS = r.CAS
	}
	incr := m.Mode != 'D' && m.Mode != '-'
	res, outcome := h.cfg.Cache.MetaArith(key, incr, r.Delta, opt)
	if h.watch.on(watchFetchers) {
		h.watchGet(cfd, key, outcome != cache.NotFound && !res.Created, false, 0, 0)
	}
	switch outcome {
	case cache.NonNumeric:
		return appendLine(out, protocol.ReplyNonNumeric)
	case cache.NoMemory:
		if res.Created {
			return appendLine(out, "SERVER_ERROR Out of memory allocating new item")
		}
		return appendLine(out, protocol.ReplyOutOfMemory)
	}
	if m.OpaqueTooLong {
		return appendLine(out, protocol.ReplyOpaqueTooLong)
	}
	switch outcome {
	case cache.Stored:
	case cache.NotFound:
		return append(appendOpaqueKey(append(out, "NF"...), m, key), "\r\n"...)
	case cache.Exists:
		return append(appendOpaqueKey(append(out, "EX"...), m, key), "\r\n"...)
	default:
		return append(appendOpaqueKey(append(out, "NS"...), m, key), "\r\n"...)
	}
	// q hides the reply of a counter changed or, as in memcached 1.6.45,
	// created by N (1.6.18 sent the created one's).
	if r.Noreply {
		return out
	}
	var tmp [20]byte
	digits := strconv.AppendUint(tmp[:0], res.Value, 10)
	value := m.Has('v')
	if value {
		out = strconv.AppendInt(append(out, "VA "...), int64(len(digits)), 10)
	} else {
		out = append(out, "HD"...)
	}
	exp := res.Exptime
	for _, f := range m.Order() {
		switch f {
		case 'c':
			out = strconv.AppendUint(append(out, " c"...), res.CAS, 10)
		case 't':
			out = appendTTL(append(out, " t"...), exp, res.Now)
		case 'T':
			exp = cache.StoredExptime(r.Exptime, res.Now)
		case 'N':
			if res.Created {
				exp = cache.StoredExptime(m.VivifyTTL, res.Now)
			}
		case 'O':
			out = append(out, ' ')
			out = append(out, m.Opaque...)
		case 'k':
			out = appendMetaKey(out, key, m.Has('b'))
		}
	}
	if value {
		out = append(append(out, "\r\n"...), digits...)
	}
	return append(out, "\r\n"...)
}

// metaDebug answers me with memcached's fields: exp (seconds left until the
// exptime, as memcached 1.6.45 prints it; -1 for none), la (seconds since the last access), cas, fetch, cls and size
// (memcached's slab class and item size for such an item).
//
// It is the only meta command memcached 1.6.18 counts in cmd_meta.
func (h *Handler) metaDebug(r *protocol.Request, key, out []byte) []byte {
	h.count(CmdMeta, 1)
	out, hit := h.cfg.Cache.Peek(out, key, meAppender{h})
	if !hit {
		return append(out, "EN\r\n"...)
	}
	return out
}

type meAppender struct{ h *Handler }

func (a meAppender) AppendItem(dst []byte, it cache.Item) []byte {
	dst = append(dst, "ME "...)
	if it.KeyBinary {
		dst = protocol.AppendBase64(dst, it.Key)
	} else {
		dst = append(dst, it.Key...)
	}
	dst = append(dst, " exp="...)
	if it.Exptime == 0 {
		dst = append(dst, "-1"...)
	} else {
		// memcached 1.6.45 prints the seconds left (1.6.18 their negation).
		dst = strconv.AppendInt(dst, int64(int32(it.Exptime-it.Now)), 10)
	}
	dst = strconv.AppendUint(append(dst, " la="...), uint64(uint32(it.Now-it.LastAccess)), 10)
	dst = strconv.AppendUint(append(dst, " cas="...), it.CAS, 10)
	if it.Fetched {
		dst = append(dst, " fetch=yes"...)
	} else {
		dst = append(dst, " fetch=no"...)
	}
	size := a.h.itemTotal(len(it.Key), it.Flags, len(it.Value))
	dst = strconv.AppendInt(append(dst, " cls="...), int64(slabClass(size)), 10)
	dst = strconv.AppendInt(append(dst, " size="...), int64(size), 10)
	return append(dst, "\r\n"...)
}

// itemTotal is memcached's ITEM_ntotal for an item: header, key and NUL,
// client flags when not 0 (4 bytes, 8 with large client flags), value and
// "\r\n", CAS unless disabled.
func (h *Handler) itemTotal(nkey int, flags uint64, nvalue int) int {
	n := 48 + nkey + 1 + nvalue + 2
	switch {
	case flags != 0 && h.cfg.LargeClientFlags:
		n += 8
	case flags != 0:
		n += 4
	}
	if !h.cfg.DisableCAS {
		n += 8
	}
	return n
}

// slabSizes are memcached's default slab class sizes (-n 48, -f 1.25, 1 MB
// pages, 512 KB largest chunk); class i+1 holds items up to slabSizes[i].
var slabSizes = func() []int {
	const factor, chunkMax, align = 1.25, 512 << 10, 8
	var sizes []int
	size := 48 + 48
	for len(sizes) < 62 && float64(size) < chunkMax/factor {
		if size%align != 0 {
			size += align - size%align
		}
		sizes = append(sizes, size)
		size = int(float64(size) * factor)
	}
	return append(sizes, chunkMax)
}()

// slabClass returns the class memcached would store an item of size bytes
// in (the largest class for chunked items).
func slabClass(size int) int {
	for i, s := range slabSizes {
		if size <= s {
			return i + 1
		}
	}
	return len(slabSizes)
}
