package protocol

import "math"

// This file parses the meta commands (mg, ms, md, ma, mn, me) as memcached
// 1.6.18's process_m*_command and _meta_flag_preparse do, with the flags
// newer releases added (E, x; see transcript.Differences), including the
// order of their checks (which decides the error when several things are
// wrong) and which errors swallow the data block of an ms. Errors of meta
// commands are sent whatever the q flag says (memcached's out_errstring).

// Meta protocol limits of memcached 1.6.18.
const (
	// maxMetaTokens is MFLAG_MAX_OPT_LENGTH: a meta line with more tokens
	// (command, key and flags, plus memcached's terminal token) is refused.
	maxMetaTokens = 20
	// MaxOpaqueLen is the longest O token, the 'O' included.
	MaxOpaqueLen = 32
	// maxMetaFlags bounds the flags one meta line can hold.
	maxMetaFlags = maxMetaTokens - 2
)

// Meta error lines, byte for byte as memcached 1.6.18 sends them.
const (
	ReplyFlagsTooLongGet  = "CLIENT_ERROR options flags are too long" // mg
	ReplyFlagsTooLong     = "CLIENT_ERROR options flags too long"     // ms, md, ma
	ReplyDuplicateFlag    = "CLIENT_ERROR duplicate flag"
	ReplyInvalidFlag      = "CLIENT_ERROR invalid flag"
	ReplyInvalidOrDupFlag = "CLIENT_ERROR invalid or duplicate flag" // md, ma: any flag error
	ReplyDecodingKey      = "CLIENT_ERROR error decoding key"
	ReplyBadToken         = "CLIENT_ERROR bad token in command line format"
	ReplyMLength          = "CLIENT_ERROR incorrect length for M token"
	ReplyInitialValue     = "CLIENT_ERROR invalid numeric initial value"
	ReplyDeltaValue       = "CLIENT_ERROR invalid numeric delta value"
	ReplyOpaqueTooLong    = "CLIENT_ERROR opaque token too long"
	ReplyInvalidModeSet   = "CLIENT_ERROR invalid mode for ms M token"
	ReplyInvalidModeArith = "CLIENT_ERROR invalid mode for ma M token"
)

// Meta errors are never silenced by q (memcached's out_errstring).
var (
	errMetaBadFormat     = &Error{Reply: ReplyBadFormat}
	errMetaBadChunk      = &Error{Reply: ReplyBadDataChunk, Kind: ErrBadChunk}
	errFlagsTooLongGet   = &Error{Reply: ReplyFlagsTooLongGet}
	errFlagsTooLong      = &Error{Reply: ReplyFlagsTooLong}
	errDuplicateFlag     = &Error{Reply: ReplyDuplicateFlag}
	errInvalidFlag       = &Error{Reply: ReplyInvalidFlag}
	errInvalidOrDupFlag  = &Error{Reply: ReplyInvalidOrDupFlag}
	errDecodingKey       = &Error{Reply: ReplyDecodingKey}
	errBadToken          = &Error{Reply: ReplyBadToken}
	errMLength           = &Error{Reply: ReplyMLength}
	errInitialValue      = &Error{Reply: ReplyInitialValue}
	errDeltaValue        = &Error{Reply: ReplyDeltaValue}
	errOpaqueTooLong     = &Error{Reply: ReplyOpaqueTooLong}
	errInvalidModeSet    = &Error{Reply: ReplyInvalidModeSet}
	errInvalidModeArith  = &Error{Reply: ReplyInvalidModeArith}
	errMetaTooLargeValue = &Error{Reply: ReplyTooLarge, Kind: ErrTooLarge}
)

// MetaArgs holds what a meta command line says besides the key. Flags are
// single letters; Has tells which were given and Order lists them in request
// order (return flags are written in that order). Numeric flag tokens go to
// Request fields where the text protocol has one: F to Flags, T to Exptime,
// C to CAS, D to Delta (1 by default for ma), q to Noreply, the ms data block
// to Data.
type MetaArgs struct {
	set   uint64             // bit (c - 'A') per flag letter c present
	order [maxMetaFlags]byte // flag letters in request order
	n     uint8

	// Opaque is the O token, 'O' included (it is echoed as is). It aliases
	// the input like Key.
	Opaque []byte
	// OpaqueTooLong: the O token is longer than MaxOpaqueLen. memcached
	// notices it while writing the reply of mg and ma, after the command
	// has run, and answers "CLIENT_ERROR opaque token too long" instead.
	OpaqueTooLong bool
	// Mode is the character of the M token (ms: E A P R S; ma: I + D -), 0
	// when absent.
	Mode byte
	// KeyLen is the decoded length of a base64 key (flag b).
	KeyLen int
	// VivifyTTL is N's token (vivify on miss with this TTL).
	VivifyTTL int64
	// RecacheTTL is R's token (win a recache token if the TTL left is below).
	RecacheTTL int64
	// Initial is J's token (ma: the value a vivified counter starts at).
	Initial uint64
	// NewCAS is E's token (memcached 1.6.45): the CAS id the change gives
	// the item (ms, mg with N, md with I or x, ma).
	NewCAS uint64
	// TooLarge: an ms whose value memcached refuses as too large; its data
	// block is being swallowed and Data is nil. memcached also unlinks the
	// key, whatever the mode.
	TooLarge bool
}

// isMeta reports whether r's meta fields belong to it.
func (r *Request) isMeta() bool {
	switch r.Cmd {
	case CmdMetaGet, CmdMetaSet, CmdMetaDelete, CmdMetaArithmetic, CmdMetaNoop, CmdMetaDebug:
		return true
	}
	return false
}

// Has reports whether flag letter c was given.
func (m *MetaArgs) Has(c byte) bool {
	return c >= 'A' && c <= 'z' && m.set&(1<<(c-'A')) != 0
}

// Order returns the flag letters in request order. The slice aliases m.
func (m *MetaArgs) Order() []byte { return m.order[:m.n] }

func (m *MetaArgs) add(c byte) {
	if c >= 'A' && c <= 'z' {
		m.set |= 1 << (c - 'A')
	}
	if int(m.n) < len(m.order) {
		m.order[m.n] = c
		m.n++
	}
}

// parseMeta parses a meta command line (first token mg, ms, md, ma, mn or
// me) whose tokens parseLine has found; buf[lineEnd:] begins with "\r\n" or
// "\n". It returns the bytes consumed, 0 when an ms data block is
// incomplete.
func (p *Parser) parseMeta(buf []byte, lineEnd int, r *Request) int {
	next := lineNext(buf, lineEnd)
	n, _ := p.tokenize(textLine(buf, lineEnd))
	r.Meta = MetaArgs{}
	nt := n + 1 // memcached's ntokens, counting its terminal token
	cmd := p.toks[0][1]
	switch cmd {
	case 'n':
		r.Cmd = CmdMetaNoop
		return next
	case 'e':
		return p.parseMetaDebug(r, n, next)
	}
	if nt < 3 {
		return fail(r, errUnknown, next)
	}
	key := p.toks[1]
	if len(key) > MaxKeyLen || (cmd == 's' && nt == 3) {
		return fail(r, errMetaBadFormat, next)
	}
	if nt > maxMetaTokens {
		if cmd == 'g' {
			return fail(r, errFlagsTooLongGet, next)
		}
		return fail(r, errFlagsTooLong, next)
	}
	r.Key = key
	switch cmd {
	case 'g':
		if e := p.metaFlags(r, p.toks[2:n]); e != nil {
			return p.metaFail(r, e, next)
		}
		r.Cmd = CmdMetaGet
	case 's':
		return p.parseMetaSet(buf, r, n, next)
	case 'd':
		if e := p.metaFlags(r, p.toks[2:n]); e != nil {
			return p.metaFail(r, errInvalidOrDupFlag, next)
		}
		if r.Meta.OpaqueTooLong {
			return p.metaFail(r, errOpaqueTooLong, next)
		}
		r.Cmd = CmdMetaDelete
	case 'a':
		r.Delta = 1
		if e := p.metaFlags(r, p.toks[2:n]); e != nil {
			return p.metaFail(r, errInvalidOrDupFlag, next)
		}
		switch r.Meta.Mode {
		case 0, 'I', '+', 'D', '-':
		default:
			return p.metaFail(r, errInvalidModeArith, next)
		}
		r.Cmd = CmdMetaArithmetic
	}
	r.Noreply = r.Meta.Has('q')
	return next
}

// metaFail makes r a CmdError for a meta line: memcached always sends these
// errors, q or not.
func (p *Parser) metaFail(r *Request, e *Error, next int) int {
	r.Noreply = false
	return fail(r, e, next)
}

// parseMetaDebug parses "me <key> [b]" (process_meta_command): only a b as
// the first flag is looked at, every other token is ignored.
func (p *Parser) parseMetaDebug(r *Request, n, next int) int {
	if n+1 < 3 || len(p.toks[1]) > MaxKeyLen {
		return fail(r, errMetaBadFormat, next)
	}
	r.Key = p.toks[1]
	if n >= 3 && len(p.toks[2]) == 1 && p.toks[2][0] == 'b' {
		r.Meta.KeyLen = DecodeBase64Key(nil, r.Key)
		if r.Meta.KeyLen == 0 {
			return fail(r, errMetaBadFormat, next)
		}
		r.Meta.add('b')
	}
	r.Cmd = CmdMetaDebug
	return next
}

// parseMetaSet parses "ms <key> <datalen> <flags>*" (process_mset_command)
// and frames its data block. Errors found once the data length is known
// swallow the data block, as memcached does.
func (p *Parser) parseMetaSet(buf []byte, r *Request, n, next int) int {
	vlen, ok := safeStrtol(p.toks[2])
	if !ok || vlen < 0 || vlen > math.MaxInt32-2 {
		return fail(r, errMetaBadFormat, next)
	}
	size := int(vlen)
	e := p.metaFlags(r, p.toks[3:n])
	if e == nil {
		switch r.Meta.Mode {
		case 0, 'E', 'A', 'P', 'R', 'S':
			if r.Meta.OpaqueTooLong {
				e = errOpaqueTooLong
			}
		default:
			e = errInvalidModeSet
		}
	}
	r.FailedCmd = CmdMetaSet
	if e != nil {
		p.swallow = size + 2
		return p.metaFail(r, e, next)
	}
	nkey := len(r.Key)
	if r.Meta.Has('b') {
		nkey = r.Meta.KeyLen
	}
	r.Noreply = r.Meta.Has('q')
	if p.tooLarge(nkey, r.Flags, size) {
		// memcached answers, swallows the data block and unlinks the key.
		p.swallow = size + 2
		r.Meta.TooLarge = true
		r.Cmd = CmdMetaSet
		r.FailedCmd = CmdNone
		return next
	}
	end := next + size + 2
	if len(buf) < end {
		p.need = end
		return 0
	}
	if buf[end-2] != '\r' || buf[end-1] != '\n' {
		return p.metaFail(r, errMetaBadChunk, end)
	}
	r.Cmd = CmdMetaSet
	r.FailedCmd = CmdNone
	r.Data = buf[next : next+size]
	return end
}

// metaFlags reads flag tokens like memcached's _meta_flag_preparse: a
// repeated flag or an unknown one fails at once; a bad numeric token or key
// encoding is remembered and reported after all flags were read, with the
// message of the last such problem (a bad F token has none of its own and
// leaves "bad command line format"). The O token's length is checked later,
// by the command.
func (p *Parser) metaFlags(r *Request, toks [][]byte) *Error {
	var seen [2]uint64 // bytes below 127 seen as a flag's first byte
	var failed *Error
	hasError := false
	m := &r.Meta
	for _, t := range toks {
		o := t[0]
		if o >= 127 || seen[o>>6]&(1<<(o&63)) != 0 {
			return errDuplicateFlag
		}
		seen[o>>6] |= 1 << (o & 63)
		switch o {
		case 'b':
			m.KeyLen = DecodeBase64Key(nil, r.Key)
			if m.KeyLen == 0 {
				failed, hasError = errDecodingKey, true
			}
		case 'N', 'T', 'R':
			v, ok := safeStrtol(t[1:])
			if !ok {
				failed, hasError = errBadToken, true
				break
			}
			switch o {
			case 'N':
				m.VivifyTTL = int64(v)
			case 'T':
				r.Exptime = int64(v)
			default:
				m.RecacheTTL = int64(v)
			}
		case 'O':
			m.Opaque = t
			m.OpaqueTooLong = len(t) > MaxOpaqueLen
		case 'l', 'P', 'L', 'k', 's', 't', 'c', 'f', 'v', 'h', 'u', 'q', 'I', 'x':
		case 'F':
			v, ok := p.parseFlags(t[1:])
			if !ok {
				hasError = true
				break
			}
			r.Flags = v
		case 'C':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				failed, hasError = errBadToken, true
				break
			}
			r.CAS = v
		case 'E':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				failed, hasError = errBadToken, true
				break
			}
			m.NewCAS = v
		case 'M':
			if len(t) != 2 {
				failed, hasError = errMLength, true
				break
			}
			m.Mode = t[1]
		case 'J':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				failed, hasError = errInitialValue, true
				break
			}
			m.Initial = v
		case 'D':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				failed, hasError = errDeltaValue, true
				break
			}
			r.Delta = v
		default:
			return errInvalidFlag
		}
		m.add(o)
	}
	if hasError {
		if failed == nil {
			failed = errMetaBadFormat
		}
		return failed
	}
	return nil
}
