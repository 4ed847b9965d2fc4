package protocol

import "bytes"

// Authentication is decided while framing, not while executing: whether a
// request may run depends on every authentication attempt before it on the
// same connection, and framing sees them all in order. The parser therefore
// checks credentials itself through an AuthCheck and records the outcome in
// Request.Auth for the handler to answer and count.

// AuthResult is the outcome of an authentication step.
type AuthResult uint8

// Authentication outcomes.
const (
	AuthNone AuthResult = iota
	// AuthOK: credentials accepted (text "STORED", binary "Authenticated").
	AuthOK
	// AuthFailed: wrong credentials or mechanism (text "CLIENT_ERROR
	// authentication failure", binary status 0x20 "Auth failure.").
	AuthFailed
	// AuthBadFormat: the text data block is not "user password".
	AuthBadFormat
	// AuthBadTermination: the text data block does not end in "\r\n".
	AuthBadTermination
	// AuthRequired: the request was refused because the connection has not
	// authenticated (text "CLIENT_ERROR unauthenticated"; binary "Auth
	// failure." and the connection is closed).
	AuthRequired
)

// Replies of memcached's text authentication (-Y), without "\r\n".
const (
	ReplyAuthRequired       = "CLIENT_ERROR unauthenticated"
	ReplyAuthFailed         = "CLIENT_ERROR authentication failure"
	ReplyAuthBadFormat      = "CLIENT_ERROR bad authentication token format"
	ReplyAuthBadTermination = "CLIENT_ERROR bad command line termination"
)

// AuthCheck reports whether user and password are valid credentials. The
// parser calls it while framing: it must be safe for concurrent use, must
// not block and must not retain its arguments.
type AuthCheck func(user, password []byte) bool

// authState is the per-connection authentication state of a Parser.
type authState struct {
	check  AuthCheck // nil: no authentication required
	authed bool      // the connection has authenticated
}

// maxTextAuthData bounds the data block of a text authentication attempt.
// memcached buffers whatever size the line declares; tandem closes the
// connection instead of buffering more than this for a user and password.
const maxTextAuthData = 64 << 10

// RequireAuth makes the connection authenticate before anything else runs,
// with credentials checked by check: a text connection as memcached's -Y
// does (a "set" whose data is "user password"), a binary one with SASL
// PLAIN. Without it (the default) binary SASL requests are unknown
// commands, as in a memcached without SASL.
func (p *Parser) RequireAuth(check AuthCheck) {
	p.auth.check = check
	p.auth.authed = false
}

// Authenticated reports whether the connection has authenticated (always
// false when no authentication is required).
func (p *Parser) Authenticated() bool { return p.auth.authed }

// SetDialect fixes the connection's protocol instead of detecting it from
// the first byte, as memcached's -B ascii and -B binary do: a text
// connection reads 0x80 as text, a binary one closes on anything that is
// not a binary request. DialectUnknown restores detection. Call it before
// the first Next.
func (p *Parser) SetDialect(d Dialect) { p.dialect = d }

// parseTextAuth frames one authentication attempt of an unauthenticated
// text connection like memcached's try_read_command_asciiauth: the line must
// be "set <key> <flags> <exptime> <bytes>" (only the byte count matters);
// anything else is answered "CLIENT_ERROR unauthenticated" and consumed.
func (p *Parser) parseTextAuth(buf []byte, r *Request) int {
	if len(buf) < 2 {
		return 0
	}
	el := bytes.IndexByte(buf, '\n')
	if el < 0 {
		if len(buf) > lineProbeLimit {
			return p.closeLine(buf, r)
		}
		return 0
	}
	r.reset()
	p.need = 0
	// The "\r" stays in the line: strtoul stops at it.
	n, _ := p.tokenize(textLine(buf, el))
	size, ok := uint32(0), false
	if n >= 5 {
		size, ok = safeStrtoul(p.toks[4])
	}
	r.Cmd = CmdTextAuth
	if n < 5 || string(p.toks[0]) != "set" || !ok {
		r.Auth = AuthRequired
		return el + 1
	}
	if int64(size)+2 > maxTextAuthData {
		return p.closeLine(buf, r)
	}
	end := el + 1 + int(size) + 2
	if len(buf) < end {
		p.need = end
		return 0
	}
	if buf[end-2] != '\r' || buf[end-1] != '\n' {
		r.Auth = AuthBadTermination
		return end
	}
	n, _ = p.tokenize(textLine(buf[el+1:end-2], int(size)))
	switch {
	case n < 2:
		r.Auth = AuthBadFormat
	case p.auth.check(p.toks[0], p.toks[1]):
		r.Auth = AuthOK
		p.auth.authed = true
	default:
		r.Auth = AuthFailed
	}
	return end
}

// checkSASLPlain verifies a SASL PLAIN message, "[authzid] NUL authcid NUL
// password"; an authorization identity, when given, must name the user.
func (p *Parser) checkSASLPlain(msg []byte) bool {
	i := bytes.IndexByte(msg, 0)
	if i < 0 {
		return false
	}
	authzid, rest := msg[:i], msg[i+1:]
	j := bytes.IndexByte(rest, 0)
	if j < 0 {
		return false
	}
	user, pass := rest[:j], rest[j+1:]
	if len(authzid) > 0 && !bytes.Equal(authzid, user) {
		return false
	}
	return p.auth.check(user, pass)
}
