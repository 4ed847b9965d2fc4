package protocol

import "math"

// This file parses the meta commands (mg, ms, md, ma, mn, me) as memcached
// 1.6.45's process_request and _meta_flag_preparse do (proto_parser.c),
// including the order of their checks (which decides the error when several
// things are wrong) and which errors swallow the data block of an ms. Where
// 1.6.45 differs from memcached 1.6.18, the reference of the differential
// tests, transcript.Differences names the difference. Errors of meta
// commands are sent whatever the q flag says (memcached's pout_errstring).

// Meta protocol limits of memcached 1.6.45.
const (
	// maxMetaTokens is MFLAG_MAX_OPT_LENGTH: a meta line with more tokens
	// (command, key, ms's data length and flags) is refused.
	maxMetaTokens = 20
	// MaxOpaqueLen is the longest O token, the 'O' included.
	MaxOpaqueLen = 32
	// maxMetaFlags bounds the flags one meta line can hold.
	maxMetaFlags = maxMetaTokens - 2
)

// Meta error lines, byte for byte as memcached 1.6.45 sends them.
const (
	ReplyFlagsTooLong     = "CLIENT_ERROR options flags are too long"
	ReplyDuplicateFlag    = "CLIENT_ERROR duplicate flag"
	ReplyInvalidFlag      = "CLIENT_ERROR invalid flag"
	ReplyInvalidOrDupFlag = "CLIENT_ERROR invalid or duplicate flag" // ma: any flag error
	ReplyDecodingKey      = "CLIENT_ERROR error decoding key"
	ReplyBadToken         = "CLIENT_ERROR bad token in command line format"
	ReplyInitialValue     = "CLIENT_ERROR invalid numeric initial value"
	ReplyDeltaValue       = "CLIENT_ERROR invalid numeric delta value"
	ReplyOpaqueTooLong    = "CLIENT_ERROR opaque token too long"
	ReplyInvalidModeSet   = "CLIENT_ERROR invalid mode for ms M token"
	ReplyInvalidModeArith = "CLIENT_ERROR invalid mode for ma M token"
)

// Meta errors are never silenced by q (memcached's pout_errstring).
var (
	errMetaBadFormat     = &Error{Reply: ReplyBadFormat}
	errMetaBadChunk      = &Error{Reply: ReplyBadDataChunk, Kind: ErrBadChunk}
	errFlagsTooLong      = &Error{Reply: ReplyFlagsTooLong}
	errDuplicateFlag     = &Error{Reply: ReplyDuplicateFlag}
	errInvalidFlag       = &Error{Reply: ReplyInvalidFlag}
	errInvalidOrDupFlag  = &Error{Reply: ReplyInvalidOrDupFlag}
	errDecodingKey       = &Error{Reply: ReplyDecodingKey}
	errBadToken          = &Error{Reply: ReplyBadToken}
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
	cmd := p.toks[0][1]
	if cmd == 'n' {
		r.Cmd = CmdMetaNoop
		return next
	}
	// memcached 1.6.45's tokenizer refuses a line with a flag token that
	// starts with neither a letter (A to z) nor a digit, before anything
	// else is checked; an ms's data block is not swallowed then.
	first := 2
	if cmd == 's' {
		first = 3
	}
	for i := first; i < n; i++ {
		if c := p.toks[i][0]; !(c >= 'A' && c <= 'z') && !(c >= '0' && c <= '9') {
			return fail(r, errMetaBadFormat, next)
		}
	}
	if n < first {
		return fail(r, errMetaBadFormat, next)
	}
	switch cmd {
	case 'e':
		return p.parseMetaDebug(r, n, next)
	case 's':
		return p.parseMetaSet(buf, r, n, next)
	}
	r.Key = p.toks[1]
	if cmd == 'a' {
		r.Delta = 1 // ma without D adds one
	}
	if e := p.metaPreparse(r, n, 2); e != nil {
		if cmd == 'a' {
			e = errInvalidOrDupFlag // ma names no flag error
		}
		return p.metaFail(r, e, next)
	}
	switch cmd {
	case 'g':
		r.Cmd = CmdMetaGet
	case 'd':
		if r.Meta.OpaqueTooLong {
			return p.metaFail(r, errOpaqueTooLong, next)
		}
		r.Cmd = CmdMetaDelete
	case 'a':
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

// metaPreparse checks the key's length and the number of tokens, then reads
// the flags (tokens first to n) like memcached 1.6.45's
// _meta_flag_preparse.
func (p *Parser) metaPreparse(r *Request, n, first int) *Error {
	if len(r.Key) > MaxKeyLen {
		return errMetaBadFormat
	}
	if n > maxMetaTokens {
		return errFlagsTooLong
	}
	return p.metaFlags(r, p.toks[first:n])
}

// metaFail makes r a CmdError for a meta line: memcached always sends these
// errors, q or not.
func (p *Parser) metaFail(r *Request, e *Error, next int) int {
	r.Noreply = false
	return fail(r, e, next)
}

// parseMetaDebug parses "me <key> [b]" (process_meta_command): only a b as
// the first flag is looked at, every other token is ignored. memcached
// 1.6.45 decodes the key only when another token follows the b (it counts
// its tokens one short of 1.6.18's, which counted a terminal token).
func (p *Parser) parseMetaDebug(r *Request, n, next int) int {
	if len(p.toks[1]) > MaxKeyLen {
		return fail(r, errMetaBadFormat, next)
	}
	r.Key = p.toks[1]
	if n >= 4 && len(p.toks[2]) == 1 && p.toks[2][0] == 'b' {
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
	vlen, ok := metaInt32(p.toks[2])
	if !ok || vlen < 0 || vlen > math.MaxInt32-2 {
		return fail(r, errMetaBadFormat, next)
	}
	size := int(vlen)
	r.Key = p.toks[1]
	e := p.metaPreparse(r, n, 3)
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
// by the command. Numbers are read as memcached 1.6.45 reads them (see
// metaInt32).
func (p *Parser) metaFlags(r *Request, toks [][]byte) *Error {
	var seen [2]uint64 // bytes below 128 seen as a flag's first byte
	var failed *Error
	hasError := false
	m := &r.Meta
	for _, t := range toks {
		o := t[0] // a letter or a digit (parseMeta checked)
		if seen[o>>6]&(1<<(o&63)) != 0 {
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
			v, ok := metaFlagInt32(t)
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
			v, ok := p.metaFlagClientFlags(t)
			if !ok {
				hasError = true
				break
			}
			r.Flags = v
		case 'C':
			v, ok := metaFlagUint64(t)
			if !ok {
				failed, hasError = errBadToken, true
				break
			}
			r.CAS = v
		case 'E':
			v, ok := metaFlagUint64(t)
			if !ok {
				failed, hasError = errBadToken, true
				break
			}
			m.NewCAS = v
		case 'M':
			// memcached 1.6.45 takes the byte after the M, whatever the
			// token's length: after a lone M, the space or line end that
			// follows, never a valid mode.
			m.Mode = ' '
			if len(t) > 1 {
				m.Mode = t[1]
			}
		case 'J':
			v, ok := metaFlagUint64(t)
			if !ok {
				failed, hasError = errInitialValue, true
				break
			}
			m.Initial = v
		case 'D':
			v, ok := metaFlagUint64(t)
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

// metaFlagClientFlags reads F's token: 32 bits, or 64 with large client
// flags (memcached built with --enable-large-client-flags); a larger number
// is refused.
func (p *Parser) metaFlagClientFlags(t []byte) (uint64, bool) {
	if p.largeFlags {
		return metaFlagUint64(t)
	}
	if len(t) < 2 {
		return 0, false
	}
	v, ok := metaUint(t[1:], 11, math.MaxUint32)
	return v, ok
}

// metaFlagInt32 and metaFlagUint64 read the number after a flag's letter,
// which must not be empty (mcmc_token_get_flag_arg_32 and _u64).
func metaFlagInt32(t []byte) (int32, bool) {
	if len(t) < 2 {
		return 0, false
	}
	return metaInt32(t[1:])
}

func metaFlagUint64(t []byte) (uint64, bool) {
	if len(t) < 2 {
		return 0, false
	}
	return metaUint(t[1:], 22, math.MaxUint64)
}

// metaInt32 reads a number as memcached 1.6.45's meta parser does
// (mcmc_tokto32): at most 11 bytes, an optional leading '-' and digits only
// (no '+', no spaces; "-" alone is 0), within 32 bits.
func metaInt32(s []byte) (int32, bool) {
	if len(s) > 11 {
		return 0, false
	}
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	v, ok := metaUint(s, 11, math.MaxInt32+1)
	if !ok || (!neg && v > math.MaxInt32) {
		return 0, false
	}
	if neg {
		return int32(-int64(v)), true
	}
	return int32(v), true
}

// metaUint reads digits only, at most maxLen of them, as a number up to
// limit (mcmc_toktou32, mcmc_toktou64).
func metaUint(s []byte, maxLen int, limit uint64) (uint64, bool) {
	if len(s) > maxLen {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		d := uint64(c - '0')
		if d > 9 || v > (limit-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
