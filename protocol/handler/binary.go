package handler

import (
	"encoding/binary"

	"github.com/tandemcache/tandem/cache"
	"github.com/tandemcache/tandem/protocol"
)

// This file executes binary-protocol requests with memcached 1.6.18's
// replies: the request's opcode and opaque echoed, quiet variants silent on
// success (and get misses), errors always sent, CAS ids in the header.

// binOK appends a success response without extras, key or value, unless
// the request is quiet.
func binOK(out []byte, r *protocol.Request, cas uint64) []byte {
	if r.Noreply {
		return out
	}
	return protocol.AppendBinHeader(out, protocol.BinResponse{Opcode: r.Bin.Opcode, Opaque: r.Bin.Opaque, CAS: cas})
}

// binErr appends an error response with memcached's message.
func binErr(out []byte, r *protocol.Request, status uint16) []byte {
	return protocol.AppendBinError(out, r.Bin.Opcode, status, r.Bin.Opaque, "")
}

// binary runs one binary request.
func (h *Handler) binary(r *protocol.Request, out []byte) ([]byte, bool) {
	b := &r.Bin
	if b.Status != protocol.StatusOK {
		return h.binRejected(r, out), b.Close
	}
	c := h.cfg.Cache
	switch b.Cmd {
	case protocol.OpGet, protocol.OpGetK, protocol.OpTouch, protocol.OpGAT, protocol.OpGATK:
		return h.binGet(r, out), false
	case protocol.OpSet, protocol.OpAdd, protocol.OpReplace, protocol.OpAppend, protocol.OpPrepend:
		return h.binStore(r, out), false
	case protocol.OpDelete:
		if h.prefixes.on() {
			h.prefixes.recordDelete(r.Key)
		}
		switch c.MetaDelete(r.Key, cache.MetaDeleteOptions{CompareCAS: r.CAS != 0, CAS: r.CAS}) {
		case cache.Deleted:
			return binOK(out, r, 0), false
		case cache.Exists:
			return binErr(out, r, protocol.StatusKeyExists), false
		}
		return binErr(out, r, protocol.StatusKeyNotFound), false
	case protocol.OpIncrement, protocol.OpDecrement:
		return h.binArith(r, out), false
	case protocol.OpQuit:
		return binOK(out, r, 0), true
	case protocol.OpFlush:
		if h.cfg.DisableFlushAll {
			return binErr(out, r, protocol.StatusAuthError), false
		}
		c.FlushAll(r.Exptime)
		return binOK(out, r, 0), false
	case protocol.OpNoop:
		return binOK(out, r, 0), false
	case protocol.OpVersion:
		return protocol.AppendBinValue(out, protocol.BinResponse{Opcode: b.Opcode, Opaque: b.Opaque}, nil, nil, []byte(Version)), false
	case protocol.OpStat:
		return h.binStats(r, out), false
	case protocol.OpSASLList:
		return protocol.AppendBinValue(out, protocol.BinResponse{Opcode: b.Opcode, Opaque: b.Opaque}, nil, nil, []byte("PLAIN")), false
	case protocol.OpSASLAuth, protocol.OpSASLStep:
		h.countAuth(r.Auth == protocol.AuthOK)
		if r.Auth == protocol.AuthOK {
			return protocol.AppendBinValue(out, protocol.BinResponse{Opcode: b.Opcode, Opaque: b.Opaque}, nil, nil, []byte("Authenticated")), false
		}
		return binErr(out, r, protocol.StatusAuthError), false
	}
	return binErr(out, r, protocol.StatusUnknownCommand), false
}

// binRejected answers a request framing refused, with the side effects
// memcached has: a set too large unlinks the key, and a storage command too
// large counts in the per-prefix stats.
func (h *Handler) binRejected(r *protocol.Request, out []byte) []byte {
	if r.Bin.Status == protocol.StatusTooLarge && r.Bin.Cmd == protocol.OpSet {
		h.cfg.Cache.RejectTooLarge(cache.Set, r.Key)
	}
	if r.Bin.Status == protocol.StatusTooLarge && h.prefixes.on() {
		switch r.Bin.Cmd {
		case protocol.OpSet, protocol.OpAdd, protocol.OpReplace, protocol.OpAppend, protocol.OpPrepend:
			// memcached counts the set before it allocates the item.
			h.prefixes.recordSet(r.Key)
		}
	}
	return binErr(out, r, r.Bin.Status)
}

// binGet answers get, getk, touch, gat, gatk and their quiet variants.
func (h *Handler) binGet(r *protocol.Request, out []byte) []byte {
	opt := cache.GetOptions{}
	switch r.Bin.Cmd {
	case protocol.OpTouch, protocol.OpGAT, protocol.OpGATK:
		opt.Touch, opt.Exptime = true, r.Exptime
	}
	out, hit := h.cfg.Cache.Get(out, r.Key, opt, binGetAppender{r})
	if h.prefixes.on() {
		h.prefixes.recordGet(r.Key, hit)
	}
	switch {
	case hit || r.Noreply:
		return out
	case r.Bin.Cmd == protocol.OpGetK || r.Bin.Cmd == protocol.OpGATK:
		// The miss of a K command carries the key and no message.
		return protocol.AppendBinValue(out, protocol.BinResponse{Opcode: r.Bin.Opcode, Status: protocol.StatusKeyNotFound, Opaque: r.Bin.Opaque}, nil, r.Key, nil)
	}
	return binErr(out, r, protocol.StatusKeyNotFound)
}

// binGetAppender writes a binary get hit: flags as extras, the key for K
// commands, the value except for touch. It holds only a pointer, so passing
// it as a cache.Appender does not allocate.
type binGetAppender struct{ r *protocol.Request }

func (a binGetAppender) AppendItem(dst []byte, it cache.Item) []byte {
	var flags [4]byte
	binary.BigEndian.PutUint32(flags[:], uint32(it.Flags)) // the extras' 32 bits, as memcached's binary get
	var key, value []byte
	switch a.r.Bin.Cmd {
	case protocol.OpGetK, protocol.OpGATK:
		key, value = it.Key, it.Value
	case protocol.OpGet, protocol.OpGAT:
		value = it.Value
	}
	return protocol.AppendBinValue(dst, protocol.BinResponse{Opcode: a.r.Bin.Opcode, Opaque: a.r.Bin.Opaque, CAS: it.CAS}, flags[:], key, value)
}

// binStoreModes maps binary storage commands to cache modes.
var binStoreModes = [...]cache.StoreMode{
	protocol.OpSet:     cache.Set,
	protocol.OpAdd:     cache.Add,
	protocol.OpReplace: cache.Replace,
	protocol.OpAppend:  cache.Append,
	protocol.OpPrepend: cache.Prepend,
}

// binStore answers set, add, replace, append, prepend and their quiet
// variants. A CAS in the header turns set, add and replace into a CAS
// store and makes append and prepend check it, as in memcached.
func (h *Handler) binStore(r *protocol.Request, out []byte) []byte {
	if h.prefixes.on() {
		h.prefixes.recordSet(r.Key)
	}
	cmd := r.Bin.Cmd
	mode := binStoreModes[cmd]
	if r.CAS != 0 && (mode == cache.Set || mode == cache.Add || mode == cache.Replace) {
		mode = cache.CAS
	}
	outcome, id := h.cfg.Cache.MetaStore(mode, r.Key, r.Data, r.Flags, r.Exptime, r.CAS, cache.MetaStoreOptions{})
	switch outcome {
	case cache.Stored:
		return binOK(out, r, id)
	case cache.Exists:
		return binErr(out, r, protocol.StatusKeyExists)
	case cache.NotFound:
		return binErr(out, r, protocol.StatusKeyNotFound)
	}
	// Not stored, too large, no memory: memcached answers by command.
	switch {
	case mode == cache.Add:
		return binErr(out, r, protocol.StatusKeyExists)
	case mode == cache.Replace:
		return binErr(out, r, protocol.StatusKeyNotFound)
	}
	return binErr(out, r, protocol.StatusNotStored)
}

// binArith answers incr and decr (and quiet variants): a missing key is
// created with the initial value unless the expiration is 0xffffffff.
func (h *Handler) binArith(r *protocol.Request, out []byte) []byte {
	opt := cache.MetaArithOptions{CAS: r.CAS}
	if r.Exptime != 0xffffffff {
		opt.Vivify, opt.Initial, opt.VivifyExpt = true, r.Bin.Initial, r.Exptime
	}
	res, outcome := h.cfg.Cache.MetaArith(r.Key, r.Bin.Cmd == protocol.OpIncrement, r.Delta, opt)
	switch outcome {
	case cache.Stored:
		if r.Noreply {
			return out
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], res.Value)
		return protocol.AppendBinValue(out, protocol.BinResponse{Opcode: r.Bin.Opcode, Opaque: r.Bin.Opaque, CAS: res.CAS}, nil, nil, v[:])
	case cache.NonNumeric:
		return binErr(out, r, protocol.StatusDeltaBadValue)
	case cache.Exists:
		return binErr(out, r, protocol.StatusKeyExists)
	case cache.NotFound:
		return binErr(out, r, protocol.StatusKeyNotFound)
	case cache.NotStored:
		return binErr(out, r, protocol.StatusNotStored)
	}
	msg := "Out of memory incrementing value"
	if res.Created {
		msg = "Out of memory allocating new item"
	}
	return protocol.AppendBinError(out, r.Bin.Opcode, protocol.StatusNoMemory, r.Bin.Opaque, msg)
}
