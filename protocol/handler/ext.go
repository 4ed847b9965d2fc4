package handler

import "github.com/tandemcache/tandem/protocol"

// executeExt runs meta and binary requests (see meta.go and binary.go once
// they exist); until then they are unknown commands.
func (h *Handler) executeExt(r *protocol.Request, out []byte) ([]byte, bool) {
	return append(out, protocol.RespError...), false
}
