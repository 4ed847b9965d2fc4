package protocol

import "bytes"

// Framing limits of memcached 1.6.18's try_read_command_ascii.
const (
	// lineProbeLimit: memcached closes the connection when more than this many
	// bytes are buffered without a "\n", unless the line is a get/gets.
	lineProbeLimit = 2048
	// maxTextLine is memcached's READ_BUFFER_SIZE: a line longer than this
	// (with its "\n") that is not a get/gets can never be held whole by
	// memcached, which closes the connection instead of answering it.
	maxTextLine = 16384
	// maxGetSpaces is how many leading spaces memcached tolerates before the
	// "get "/"gets " of an overlong line.
	maxGetSpaces = 100
	// maxTokens is memcached's MAX_TOKENS: at most maxTokens-1 tokens are split
	// off a line; the rest stays unprocessed (get re-tokenizes it).
	maxTokens = 24
)

// DefaultMaxGetLine bounds a get/gets line (keys included). memcached grows
// its buffer without limit for large multigets; tandem closes the connection
// past this many bytes so memory per connection stays bounded.
const DefaultMaxGetLine = 4 << 20

// memcached's item accounting, for SetItemSizeMax.
const (
	itemHeaderSize = 48 // sizeof(item) on 64-bit builds
	itemFlagsSize  = 4  // stored only when flags != 0 (8 with large client flags)
	itemCASSize    = 8  // stored unless -C
)

// Parser is the incremental request parser of one connection. Not safe for
// concurrent use. It holds the connection's dialect, the count of bytes still
// to swallow after a rejected value, and the item size limit. It never
// allocates after construction.
type Parser struct {
	maxValue    int
	itemSizeMax int // > 0: use memcached's item accounting instead of maxValue
	itemCAS     bool
	largeFlags  bool // client flags are 64 bits (SetLargeClientFlags)
	maxGetLine  int

	dialect Dialect
	swallow int // bytes of a rejected data block still to discard
	need    int // bytes the pending storage request needs; 0 if unknown
	scanned int // leading bytes of the input known to hold no '\n'

	toks [maxTokens - 1][]byte // tokens of the current line

	auth authState // see auth.go
}

// NewParser returns a parser for one connection. maxValue is the item size
// limit (-I) in bytes: a storage command declaring a longer value is rejected
// with "SERVER_ERROR object too large for cache" and its data swallowed.
func NewParser(maxValue int) *Parser {
	return &Parser{maxValue: max(maxValue, 0), maxGetLine: DefaultMaxGetLine}
}

// SetItemSizeMax makes the too-large check byte-exact with memcached's -I
// limit, which counts the whole item rather than the value: memcached rejects
// a value when 48 (item header) + key length + 1 + 4 (when flags != 0) +
// value length + 2 + 8 (when useCAS, i.e. without -C) exceeds itemSizeMax.
// itemSizeMax <= 0 restores the plain "value longer than maxValue" check.
func (p *Parser) SetItemSizeMax(itemSizeMax int, useCAS bool) {
	p.itemSizeMax = itemSizeMax
	p.itemCAS = useCAS
}

// SetLargeClientFlags makes client flags 64 bits wide, as in a memcached built
// with configure's --enable-large-client-flags: a storage command's flags
// and meta F accept up to 18446744073709551615 (a larger number is
// "CLIENT_ERROR bad command line format"), and the item accounting of
// SetItemSizeMax counts 8 bytes of flags. Without it flags are memcached's
// default 32 bits: a larger number is truncated to its low 32 bits, as
// memcached's strtoul-based parsing does ("4294967296" stores 0). The binary
// protocol's extras hold 32 bits either way.
func (p *Parser) SetLargeClientFlags(on bool) { p.largeFlags = on }

// parseFlags reads a client flags token as memcached's safe_strtoflags: 64
// bits with large client flags, else strtoul truncated to 32 bits.
func (p *Parser) parseFlags(s []byte) (uint64, bool) {
	if p.largeFlags {
		return safeStrtoull(s)
	}
	v, ok := safeStrtoul(s)
	return uint64(v), ok
}

// Dialect reports the connection's protocol, decided by its first byte
// (0x80 = binary, anything else = text); DialectUnknown before any input.
func (p *Parser) Dialect() Dialect { return p.dialect }

// NeedBytes reports how many bytes, counted from the start of the unconsumed
// input, the next call needs to make progress, when known: after Next
// returned 0 for a storage command whose data block has not fully arrived.
// Otherwise it returns 0. Calling Next with fewer bytes returns 0 at once.
func (p *Parser) NeedBytes() int { return p.need }

// Next parses the next request from buf, the unconsumed input of the
// connection (bytes not yet consumed by earlier calls, in order). It returns
// the number of bytes consumed, never more than len(buf). 0 means "no
// complete request yet, call again with more bytes"; r must not be used then.
// When n > 0, r holds either a command, or CmdError with r.Err (the reply
// memcached gives and whether to close), or CmdNone (bytes swallowed, nothing
// to reply). r's slices alias buf; r.Keys and r.Args reuse their capacity.
func (p *Parser) Next(buf []byte, r *Request) int {
	if len(buf) == 0 {
		return 0
	}
	if p.swallow > 0 {
		n := min(len(buf), p.swallow)
		p.swallow -= n
		r.reset()
		return n
	}
	switch p.dialect {
	case DialectUnknown:
		if buf[0] == 0x80 {
			p.dialect = DialectBinary
			return p.parseBinary(buf, r)
		}
		p.dialect = DialectText
	case DialectBinary:
		return p.parseBinary(buf, r)
	}
	if len(buf) < p.need {
		return 0
	}
	if p.auth.check != nil && !p.auth.authed {
		return p.parseTextAuth(buf, r) // memcached -Y (see auth.go)
	}
	return p.parseText(buf, r)
}

// parseText frames one text line as try_read_command_ascii does and parses it.
func (p *Parser) parseText(buf []byte, r *Request) int {
	start := p.scanned
	if start > len(buf) {
		start = 0
	}
	i := bytes.IndexByte(buf[start:], '\n')
	if i < 0 {
		p.scanned = len(buf)
		if len(buf) > lineProbeLimit && (!isGetLine(buf) || len(buf) > p.maxGetLine) {
			return p.closeLine(buf, r)
		}
		return 0
	}
	e := start + i
	if e >= maxTextLine && (!isGetLine(buf) || e >= p.maxGetLine) {
		return p.closeLine(buf, r)
	}
	p.scanned = 0
	lineEnd := e
	if e > 1 && buf[e-1] == '\r' {
		lineEnd = e - 1
	}
	return p.parseLine(buf, lineEnd, e+1, r)
}

// closeLine rejects an overlong line: memcached closes the connection
// without a reply.
func (p *Parser) closeLine(buf []byte, r *Request) int {
	p.scanned = 0
	p.need = 0
	r.reset()
	r.Cmd = CmdError
	r.Err = errLineTooLong
	return len(buf)
}

// isGetLine reports whether buf starts like a large multiget memcached keeps
// reading: at most 100 spaces, then "get " or "gets ".
func isGetLine(buf []byte) bool {
	i := 0
	for i < len(buf) && buf[i] == ' ' {
		i++
		if i > maxGetSpaces {
			return false
		}
	}
	return bytes.HasPrefix(buf[i:], []byte("get ")) || bytes.HasPrefix(buf[i:], []byte("gets "))
}

// lineNext returns the offset just past the line ending at lineEnd, where
// buf[lineEnd:] begins with "\r\n" or "\n".
func lineNext(buf []byte, lineEnd int) int {
	if buf[lineEnd] == '\n' {
		return lineEnd + 1
	}
	return lineEnd + 2
}

// textLine returns the line ending at lineEnd as memcached's tokenizer sees
// it: cut at the first NUL byte (memcached uses strlen).
func textLine(buf []byte, lineEnd int) []byte {
	line := buf[:lineEnd]
	if k := bytes.IndexByte(line, 0); k >= 0 {
		line = line[:k]
	}
	return line
}

// tokenize splits line on spaces (only spaces: tabs and other control bytes
// are part of tokens) into p.toks like memcached's tokenize_command with
// MAX_TOKENS 24. It returns the number of tokens n (at most 23; memcached's
// ntokens is n+1, counting its terminal token) and the offset where the
// unprocessed rest of the line starts (len(line) when nothing is left).
func (p *Parser) tokenize(line []byte) (n, rest int) {
	s := 0
	for e := 0; e < len(line); e++ {
		if line[e] != ' ' {
			continue
		}
		if s != e {
			p.toks[n] = line[s:e]
			n++
			if n == len(p.toks) {
				return n, e + 1
			}
		}
		s = e + 1
	}
	if s < len(line) {
		p.toks[n] = line[s:]
		n++
	}
	return n, len(line)
}

// reset clears the fields the text parser sets, keeping the capacity of
// Keys and Args.
func (r *Request) reset() {
	r.Cmd = CmdNone
	r.Line = nil
	r.Key = nil
	r.Keys = r.Keys[:0]
	r.Flags = 0
	r.Exptime = 0
	r.Delta = 0
	r.CAS = 0
	r.Data = nil
	r.Noreply = false
	r.Args = r.Args[:0]
	r.Err = nil
	r.FailedCmd = CmdNone
}
