package handler

import (
	"sync/atomic"

	"github.com/tandemcache/tandem/protocol"
)

// extCounters are the counters of authentication, which memcached reports
// as auth_cmds and auth_errors.
type extCounters struct {
	authCmds   atomic.Uint64
	authErrors atomic.Uint64
}

// AuthStats returns memcached's auth_cmds (authentication attempts, text or
// SASL) and auth_errors (failed ones).
func (h *Handler) AuthStats() (cmds, errors uint64) {
	return h.ext.authCmds.Load(), h.ext.authErrors.Load()
}

// configureParser applies the connection-wide protocol settings to a new
// session's parser.
func (h *Handler) configureParser(p *protocol.Parser) {
	p.SetDialect(h.cfg.Dialect)
	if h.cfg.Auth != nil {
		p.RequireAuth(h.cfg.Auth.Check)
	}
}

// countAuth counts an authentication attempt.
func (h *Handler) countAuth(ok bool) {
	h.ext.authCmds.Add(1)
	if !ok {
		h.ext.authErrors.Add(1)
	}
}

// executeExt runs meta, binary and text-authentication requests.
func (h *Handler) executeExt(r *protocol.Request, out []byte) ([]byte, bool) {
	switch r.Cmd {
	case protocol.CmdMetaGet, protocol.CmdMetaSet, protocol.CmdMetaDelete, protocol.CmdMetaArithmetic, protocol.CmdMetaDebug:
		return h.metaExec(r, out), false
	case protocol.CmdMetaNoop:
		return append(out, "MN\r\n"...), false
	case protocol.CmdBinary:
		return h.binary(r, out)
	case protocol.CmdTextAuth:
		return h.textAuth(r, out), false
	}
	return append(out, protocol.RespError...), false
}

// textAuth answers an authentication attempt of a text connection.
func (h *Handler) textAuth(r *protocol.Request, out []byte) []byte {
	switch r.Auth {
	case protocol.AuthOK:
		h.countAuth(true)
		return append(out, protocol.RespStored...)
	case protocol.AuthFailed:
		h.countAuth(false)
		return appendLine(out, protocol.ReplyAuthFailed)
	case protocol.AuthBadFormat:
		return appendLine(out, protocol.ReplyAuthBadFormat)
	case protocol.AuthBadTermination:
		return appendLine(out, protocol.ReplyAuthBadTermination)
	}
	return appendLine(out, protocol.ReplyAuthRequired)
}
