package handler

import "github.com/tandemcache/tandem/protocol"

// executeExt runs meta and binary requests (see meta.go and binary.go once
// they exist); until then they are unknown commands.
func (h *Handler) executeExt(r *protocol.Request, out []byte) ([]byte, bool) {
	return append(out, protocol.RespError...), false
}

// statsExt answers stats subcommands beyond settings and reset (items,
// slabs, conns, ... are the operations work); unknown ones are an ERROR,
// as in memcached.
func (h *Handler) statsExt(r *protocol.Request, out []byte) []byte {
	return append(out, protocol.RespError...)
}
