package handler

import (
	"bytes"
	"strconv"

	"github.com/tandemcache/tandem/protocol"
)

// The command log of verbosity 2 (memcached -vv): every command line a
// client sends and every reply line it gets, at debug level, with the
// client's address. memcached prints them as "<fd command" and ">fd reply";
// tandem logs the same text after "<" or ">" with the address in the peer
// field. Values are not logged: a get hit is "> sending key <key>", as in
// memcached, and data blocks are skipped. Replies suppressed by noreply or q
// are not logged, and neither are the lines of stats replies.

// maxLoggedReplyLines bounds the log lines one reply produces.
const maxLoggedReplyLines = 64

// verbose reports whether the command log is on.
func (h *Handler) verbose() bool { return h.verbosity.Load() >= 2 }

// setVerbosity applies a verbosity command.
func (h *Handler) setVerbosity(level int) {
	h.verbosity.Store(int64(level))
	if h.cfg.OnVerbosity != nil {
		h.cfg.OnVerbosity(level)
	}
}

// logExchange logs r's command line (with cmd) and the lines of its reply
// (with replies).
func (h *Handler) logExchange(peer string, r *protocol.Request, reply []byte, cmd, replies bool) {
	l := &h.cfg.Logger
	if r.Cmd == protocol.CmdBinary {
		if cmd {
			l.Debug().Str("peer", peer).Str("opcode", "0x"+strconv.FormatUint(uint64(r.Bin.Opcode), 16)).
				Bytes("key", r.Key).Msg("< binary request")
		}
		if replies && len(reply) >= protocol.BinHeaderLen {
			status := uint64(reply[6])<<8 | uint64(reply[7])
			l.Debug().Str("peer", peer).Str("status", "0x"+strconv.FormatUint(status, 16)).Msg("> binary response")
		}
		return
	}
	if cmd && r.Line != nil {
		l.Debug().Str("peer", peer).Msg("< " + string(r.Line))
	}
	if !replies {
		return
	}
	if r.Cmd == protocol.CmdStats && len(reply) > 0 && !bytes.HasPrefix(reply, []byte("ERROR")) &&
		!bytes.HasPrefix(reply, []byte("CLIENT_ERROR")) {
		return
	}
	if r.Cmd == protocol.CmdLruCrawler && (bytes.HasPrefix(reply, []byte("key=")) || bytes.HasPrefix(reply, []byte(protocol.RespEnd))) {
		return // a metadump, which memcached's crawler writes unlogged
	}
	for n := 0; len(reply) > 0 && n < maxLoggedReplyLines; n++ {
		line, rest, found := bytes.Cut(reply, []byte("\r\n"))
		if !found {
			return
		}
		reply = rest
		msg := "> " + string(line)
		if k, ok := bytes.CutPrefix(line, []byte("VALUE ")); ok {
			f := bytes.Fields(k)
			if len(f) >= 3 {
				msg = "> sending key " + string(f[0])
				reply = skipData(reply, f[2])
			}
		} else if v, ok := bytes.CutPrefix(line, []byte("VA ")); ok {
			size, _, _ := bytes.Cut(v, []byte(" "))
			reply = skipData(reply, size)
		}
		l.Debug().Str("peer", peer).Msg(msg)
	}
}

// skipData drops a data block of the decimal length n and its "\r\n" from
// the front of reply.
func skipData(reply, n []byte) []byte {
	size, err := strconv.Atoi(string(n))
	if err != nil || size < 0 || size+2 > len(reply) {
		return nil
	}
	return reply[size+2:]
}
