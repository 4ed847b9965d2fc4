package handler

import (
	"bytes"

	"github.com/tandemcache/tandem/protocol"
)

// binStats answers a binary stat request: one response per statistic (key
// the name, value the value) and an empty one to end, all with the
// request's opaque. The key names the group like the text command's
// arguments; as memcached does, "reset" and "settings" match as prefixes
// and an unknown group is "Not found". The statistics are those of the
// text protocol, produced by the same code.
func (h *Handler) binStats(r *protocol.Request, out []byte) []byte {
	text := protocol.Request{Cmd: protocol.CmdStats}
	switch key := r.Key; {
	case len(key) == 0:
	case bytes.HasPrefix(key, []byte("reset")):
		text.Args = [][]byte{[]byte("reset")}
	case bytes.HasPrefix(key, []byte("settings")):
		text.Args = [][]byte{[]byte("settings")}
	case bytes.HasPrefix(key, []byte("detail")):
		// memcached: "detail dump|on|off"; anything else is not found.
		switch rest := key[len("detail"):]; {
		case bytes.HasPrefix(rest, []byte(" dump")):
			text.Args = [][]byte{[]byte("detail"), []byte("dump")}
		case bytes.HasPrefix(rest, []byte(" on")), bytes.HasPrefix(rest, []byte(" off")):
			h.stats(&protocol.Request{Cmd: protocol.CmdStats, Args: bytes.Fields(key)}, nil)
			return h.binStatEnd(r, out)
		default:
			return binErr(out, r, protocol.StatusKeyNotFound)
		}
	case bytes.HasPrefix(key, []byte("cachedump")):
		// memcached answers the key dumps on the text protocol only.
		return binErr(out, r, protocol.StatusKeyNotFound)
	default:
		text.Args = bytes.Fields(key)
	}
	lines := h.stats(&text, nil)
	if bytes.Equal(lines, []byte(protocol.RespReset)) {
		return h.binStatEnd(r, out)
	}
	if !bytes.HasSuffix(lines, []byte(protocol.RespEnd)) {
		return binErr(out, r, protocol.StatusKeyNotFound)
	}
	for line := range bytes.SplitSeq(lines[:len(lines)-len(protocol.RespEnd)], []byte("\r\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("STAT "))
		if !ok {
			continue
		}
		name, value, _ := bytes.Cut(rest, []byte(" "))
		out = protocol.AppendBinValue(out, protocol.BinResponse{Opcode: r.Bin.Opcode, Opaque: r.Bin.Opaque}, nil, name, value)
	}
	return h.binStatEnd(r, out)
}

// binStatEnd appends the empty response that ends a stat reply.
func (h *Handler) binStatEnd(r *protocol.Request, out []byte) []byte {
	return protocol.AppendBinHeader(out, protocol.BinResponse{Opcode: r.Bin.Opcode, Opaque: r.Bin.Opaque})
}
