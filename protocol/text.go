package protocol

import (
	"bytes"
	"math"
)

// This file turns one classic text line into a Request, following memcached
// 1.6.45's process_request (proto_parser.c) and process_command_ascii
// (proto_text.c), including the order of their checks (which decides the
// reply when several things are wrong). Where 1.6.45 answers differently
// from 1.6.18 (transcript.Differences), the error carries 1.6.18's reply
// (Error.Was1618).
//
// As 1.6.45 does, the command is the bytes before the first space (a line
// with leading spaces names no command), the line is read by its length
// (a NUL byte is part of a token), at most 23 tokens are split off and the
// command uses the ones it needs, ignoring the rest, and noreply is the
// last token whatever the count.

// minCommandLine is the shortest line memcached 1.6.45 parses, its line
// ending included ("mn\r\n").
const minCommandLine = 4

// parseLine parses the line buf[:lineEnd]; next is the offset just past its
// "\n". It returns the bytes consumed (0 when a data block is incomplete).
func (p *Parser) parseLine(buf []byte, lineEnd, next int, r *Request) int {
	r.reset()
	p.need = 0
	line := buf[:lineEnd]
	r.Line = line
	// memcached 1.6.45 refuses a line shorter than four bytes with its line
	// ending (a blank line, " \n", "x\r\n"): no command is that short.
	if next < minCommandLine {
		return fail(r, errTooShort, next)
	}
	name := line
	if k := bytes.IndexByte(line, ' '); k >= 0 {
		name = line[:k]
	}
	switch string(name) {
	case "mg", "ms", "md", "ma", "mn", "me":
		return p.parseMeta(buf, lineEnd, r)
	}
	n, rest := p.tokenize(line)
	switch string(name) {
	case "get":
		return p.parseGet(r, CmdGet, line, n, rest, next)
	case "gets":
		return p.parseGet(r, CmdGets, line, n, rest, next)
	case "gat":
		return p.parseGet(r, CmdGat, line, n, rest, next)
	case "gats":
		return p.parseGet(r, CmdGats, line, n, rest, next)
	case "set":
		return p.parseStorage(buf, r, CmdSet, n, next)
	case "add":
		return p.parseStorage(buf, r, CmdAdd, n, next)
	case "replace":
		return p.parseStorage(buf, r, CmdReplace, n, next)
	case "append":
		return p.parseStorage(buf, r, CmdAppend, n, next)
	case "prepend":
		return p.parseStorage(buf, r, CmdPrepend, n, next)
	case "cas":
		return p.parseStorage(buf, r, CmdCas, n, next)
	case "delete":
		return p.parseDelete(r, n, next)
	case "incr":
		return p.parseArith(r, CmdIncr, n, next)
	case "decr":
		return p.parseArith(r, CmdDecr, n, next)
	case "touch":
		return p.parseTouch(r, n, next)
	case "version":
		r.Cmd = CmdVersion
		return next
	case "quit":
		r.Cmd = CmdQuit
		return next
	case "stats", "watch":
		r.Cmd = argCommands[string(name)]
		r.Args = append(r.Args, p.toks[1:n]...)
		return next
	}
	// memcached 1.6.45 looks the rarer commands up by their first token,
	// which leading spaces do not hide (" flush_all" flushes).
	if n > 0 {
		switch string(p.toks[0]) {
		case "flush_all":
			return p.parseFlushAll(r, n, next)
		case "verbosity":
			return p.parseVerbosity(r, n, next)
		case "lru_crawler", "lru", "slabs", "cache_memlimit", "shutdown":
			// Commands whose arguments the handler parses (Request.Args).
			r.Cmd = argCommands[string(p.toks[0])]
			r.Noreply = p.isNoreply(n)
			r.Args = append(r.Args, p.toks[1:n]...)
			return next
		case "refresh_certs":
			r.Cmd = CmdRefreshCerts
			r.Noreply = p.isNoreply(n)
			return next
		}
	}
	// memcached 1.6.45 closes the connection on an unknown command whose
	// last token (of two or more) starts with "HTTP/", so that a browser
	// tricked into sending a request to the cache gets nothing back (its
	// t/malicious-commands.t), and honours a last noreply on ERROR.
	if n > 1 && bytes.HasPrefix(p.toks[n-1], []byte("HTTP/")) {
		if isHTTPRequest1618(p.toks[0]) {
			return fail(r, errHTTPRequest, next)
		}
		return fail(r, errHTTPRequestNew, next)
	}
	if n == 1 && bytes.HasPrefix(p.toks[0], []byte("HTTP/")) && isHTTPRequest1618(p.toks[0]) {
		return fail(r, errUnknownWasHTTP, next)
	}
	if n > 0 && p.isNoreply(n) {
		r.Noreply = true
		return fail(r, errUnknownQuiet, next)
	}
	return fail(r, errUnknown, next)
}

// argCommands are the commands whose arguments the handler parses.
var argCommands = map[string]Command{
	"stats": CmdStats, "lru_crawler": CmdLruCrawler, "slabs": CmdSlabs, "watch": CmdWatch,
	"cache_memlimit": CmdCacheMemlimit, "shutdown": CmdShutdown, "lru": CmdLru,
}

// isHTTPRequest1618 reports whether memcached 1.6.18 also closed on an
// unknown command named cmd whose last token starts with "HTTP/": it
// looked only once its dispatch had found no command, so names starting
// with a, c, d, g, i, s or t, two-letter names starting with m, and the
// commands it served that tandem does not (extstore) were answered ERROR.
func isHTTPRequest1618(cmd []byte) bool {
	switch {
	case bytes.IndexByte([]byte("acdgist"), cmd[0]) >= 0:
		return false
	case cmd[0] == 'm' && len(cmd) == 2:
		return false
	}
	switch string(cmd) {
	case "lru_crawler", "watch", "extstore":
		return false
	}
	return true
}

// fail makes r a CmdError with e and returns n.
func fail(r *Request, e *Error, n int) int {
	r.Cmd = CmdError
	r.Err = e
	return n
}

// isNoreply is memcached's set_noreply_maybe: the token before the terminal
// one, i.e. the last of the n tokens, is exactly "noreply".
func (p *Parser) isNoreply(n int) bool {
	return string(p.toks[n-1]) == "noreply"
}

// parseGet parses get, gets, gat and gats (process_get_command). Keys past
// the 23-token window come from the unprocessed rest of the line.
// A key longer than 250 bytes fails the whole command before any lookup;
// memcached discards the replies of the keys before it, so only side effects
// on those earlier keys (LRU bumps, gat touches, hit counters) differ.
func (p *Parser) parseGet(r *Request, cmd Command, line []byte, n, rest, next int) int {
	first := 1
	if cmd == CmdGat || cmd == CmdGats {
		first = 2
	}
	if n <= first {
		// memcached 1.6.45: no key ("get \r\n", "gat 10") is a format
		// error; 1.6.18 answered ERROR, and END to a gat without keys.
		return fail(r, errTooFew, next)
	}
	if first == 2 {
		exptime, ok := tokInt32(p.toks[1])
		if !ok {
			r.FailedCmd = cmd
			return fail(r, errInvalidExptime, next)
		}
		r.Exptime = int64(exptime)
	}
	for _, k := range p.toks[first:n] {
		if len(k) > MaxKeyLen {
			return p.failKeys(r, cmd, next)
		}
		r.Keys = append(r.Keys, k)
	}
	for s := rest; s < len(line); {
		if line[s] == ' ' {
			s++
			continue
		}
		e := s + 1
		for e < len(line) && line[e] != ' ' {
			e++
		}
		if e-s > MaxKeyLen {
			return p.failKeys(r, cmd, next)
		}
		r.Keys = append(r.Keys, line[s:e])
		s = e
	}
	r.Key = r.Keys[0]
	r.Cmd = cmd
	return next
}

// failKeys rejects a retrieval line with an overlong key. r.Keys keeps the
// keys before it: memcached has already looked them up (counting hits,
// bumping, touching for gat) when it meets the bad key, and only then
// answers with an error and drops their values.
func (p *Parser) failKeys(r *Request, cmd Command, next int) int {
	if len(r.Keys) > 0 {
		r.Key = r.Keys[0]
	}
	r.FailedCmd = cmd
	return fail(r, errBadFormat, next)
}

// parseStorage parses set, add, replace, append, prepend and cas
// (process_update_command) and frames their data block.
func (p *Parser) parseStorage(buf []byte, r *Request, cmd Command, n, next int) int {
	if n < 5 {
		// memcached 1.6.45: a storage line without its key, flags, exptime
		// and length is a format error, sent whatever noreply says; 1.6.18
		// answered ERROR.
		return fail(r, errTooShort, next)
	}
	// memcached 1.6.45 parses the length first, strictly (digits only,
	// 32 bits): a line whose length does not parse is refused whatever
	// noreply says and its data block read as a command. Once the length
	// parsed, every other refusal (key too long, bad flags, exptime or
	// unique, a cas without its unique) swallows the data block and its
	// "\r\n" (conn_swallow), and noreply silences the reply; 1.6.18 read
	// the block as a command.
	r.Noreply = p.isNoreply(n) // errBadLength is sent all the same
	vlen, ok := tokInt32(p.toks[4])
	if !ok || vlen < 0 || vlen > math.MaxInt32-2 {
		if cmd == CmdCas && n == 5 {
			return fail(r, errBadLengthCas, next)
		}
		return fail(r, errBadLength, next)
	}
	size := int(vlen)
	refuse := func(e *Error) int {
		p.swallow = size + 2
		return fail(r, e, next)
	}
	if cmd == CmdCas && n == 5 {
		// memcached 1.6.45: a cas without its unique is a format error
		// (whichever of its checks fails first, the reply is the same);
		// 1.6.18 answered ERROR.
		return refuse(errCasNoUnique)
	}
	r.FailedCmd = cmd
	key := p.toks[1]
	if len(key) > MaxKeyLen {
		return refuse(errBadFormat)
	}
	r.Key = key
	flags, ok1 := p.parseFlags(p.toks[2])
	exptime, ok2 := safeStrtol(p.toks[3])
	if !ok1 || !ok2 {
		return refuse(errBadFormat)
	}
	r.Flags = flags
	r.Exptime = int64(exptime)
	if cmd == CmdCas {
		cas, ok := tokUint64(p.toks[5])
		if !ok {
			return refuse(errBadFormat)
		}
		r.CAS = cas
	}
	if p.tooLarge(len(key), flags, size) {
		// memcached answers, then swallows the declared data block and its
		// "\r\n" whatever they contain (conn_swallow).
		p.swallow = size + 2
		return fail(r, errTooLarge, next)
	}
	end := next + size + 2
	if len(buf) < end {
		p.need = end
		return 0
	}
	if buf[end-2] != '\r' || buf[end-1] != '\n' {
		// memcached read exactly size+2 bytes; parsing resumes after them.
		return fail(r, errBadDataChunk, end)
	}
	r.Cmd = cmd
	r.FailedCmd = CmdNone
	r.Data = buf[next : next+size]
	return end
}

// tooLarge reports whether memcached's item_alloc would refuse the item as
// too large (see SetItemSizeMax), or else whether the value exceeds maxValue.
func (p *Parser) tooLarge(nkey int, flags uint64, size int) bool {
	if p.itemSizeMax <= 0 {
		return size > p.maxValue
	}
	total := itemHeaderSize + nkey + 1 + size + 2
	switch {
	case flags != 0 && p.largeFlags:
		total += 2 * itemFlagsSize // memcached: sizeof(client_flags_t), 8 bytes
	case flags != 0:
		total += itemFlagsSize
	}
	if p.itemCAS {
		total += itemCASSize
	}
	return total > p.itemSizeMax
}

// parseDelete parses "delete <key> [0] [noreply]" (process_delete_command).
// Without its key it is a format error, as in memcached 1.6.45. Tokens
// after the key are checked as memcached 1.6.18 did ("0", the removed hold
// time, and noreply only), not ignored as 1.6.45 does: libmemcached's
// memcapable, run by the tests, requires "delete a b c d e" to fail.
func (p *Parser) parseDelete(r *Request, n, next int) int {
	nt := n + 1
	switch {
	case n < 2:
		return fail(r, errTooFew, next)
	case nt > 5:
		return fail(r, errUnknown, next)
	}
	r.FailedCmd = CmdDelete
	if nt > 3 {
		holdIsZero := string(p.toks[2]) == "0"
		r.Noreply = p.isNoreply(n)
		valid := (nt == 4 && (holdIsZero || r.Noreply)) || (nt == 5 && holdIsZero && r.Noreply)
		if !valid {
			return fail(r, errDeleteUsage, next)
		}
	}
	if len(p.toks[1]) > MaxKeyLen {
		return fail(r, errBadFormat, next)
	}
	r.Key = p.toks[1]
	r.Cmd = CmdDelete
	r.FailedCmd = CmdNone
	return next
}

// parseArith parses "incr|decr <key> <delta> [noreply]".
func (p *Parser) parseArith(r *Request, cmd Command, n, next int) int {
	if n < 3 {
		return fail(r, errTooFew, next)
	}
	r.FailedCmd = cmd
	r.Noreply = p.isNoreply(n)
	if len(p.toks[1]) > MaxKeyLen {
		return fail(r, errBadFormat, next)
	}
	r.Key = p.toks[1]
	delta, ok := tokUint64(p.toks[2])
	if !ok {
		return fail(r, errInvalidDelta, next)
	}
	r.Delta = delta
	r.Cmd = cmd
	r.FailedCmd = CmdNone
	return next
}

// parseTouch parses "touch <key> <exptime> [noreply]".
func (p *Parser) parseTouch(r *Request, n, next int) int {
	if n < 3 {
		return fail(r, errTooFew, next)
	}
	r.FailedCmd = CmdTouch
	r.Noreply = p.isNoreply(n)
	if len(p.toks[1]) > MaxKeyLen {
		return fail(r, errBadFormat, next)
	}
	r.Key = p.toks[1]
	exptime, ok := tokInt32(p.toks[2])
	if !ok {
		return fail(r, errInvalidExptime, next)
	}
	r.Exptime = int64(exptime)
	r.Cmd = CmdTouch
	r.FailedCmd = CmdNone
	return next
}

// parseFlushAll parses "flush_all [delay] [noreply]". Args holds the
// arguments without a trailing noreply; Exptime the delay (0 when absent).
// Tokens after the delay are ignored, as memcached does.
func (p *Parser) parseFlushAll(r *Request, n, next int) int {
	r.FailedCmd = CmdFlushAll
	r.Noreply = p.isNoreply(n)
	want := 1
	if r.Noreply {
		want = 2
	}
	if n != want {
		exptime, ok := tokInt32(p.toks[1])
		if !ok {
			return fail(r, errInvalidExptime, next)
		}
		r.Exptime = int64(exptime)
	}
	r.Args = append(r.Args, p.argsNoreply(r, n)...)
	r.Cmd = CmdFlushAll
	r.FailedCmd = CmdNone
	return next
}

// parseVerbosity parses "verbosity <level> [noreply]"; the level is in
// r.Delta (tokens after it other than a last noreply are ignored).
func (p *Parser) parseVerbosity(r *Request, n, next int) int {
	r.FailedCmd = CmdVerbosity
	r.Noreply = p.isNoreply(n)
	if n < 2 {
		// memcached 1.6.45: no level is a format error; 1.6.18: ERROR.
		return fail(r, errNoLevel, next)
	}
	level, ok := tokUint32(p.toks[1])
	if !ok {
		return fail(r, errBadFormat, next)
	}
	r.Delta = uint64(level)
	r.Args = append(r.Args, p.argsNoreply(r, n)...)
	r.Cmd = CmdVerbosity
	r.FailedCmd = CmdNone
	return next
}

// argsNoreply returns the arguments of the n tokens without a trailing noreply.
func (p *Parser) argsNoreply(r *Request, n int) [][]byte {
	if r.Noreply {
		n--
	}
	return p.toks[1:n]
}

// Strict numbers of memcached 1.6.45 (mcmc_toktou32, mcmc_toktou64,
// mcmc_tokto32): the whole token is decimal digits, a leading '-' only for
// the signed kind ("-" alone reads 0), and the value fits the type; no
// sign '+', no whitespace, no trailing bytes.

// tokUint64 is mcmc_toktou64.
func tokUint64(s []byte) (uint64, bool) {
	if len(s) > 22 {
		return 0, false
	}
	var v uint64
	for _, c := range s {
		d := uint64(c - '0')
		if c < '0' || c > '9' || v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// tokUint32 is mcmc_toktou32.
func tokUint32(s []byte) (uint32, bool) {
	if len(s) > 11 {
		return 0, false
	}
	v, ok := tokUint64(s)
	return uint32(v), ok && v <= math.MaxUint32
}

// tokInt32 is mcmc_tokto32.
func tokInt32(s []byte) (int32, bool) {
	if len(s) > 11 {
		return 0, false
	}
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	v, ok := tokUint64(s)
	switch {
	case !ok, !neg && v > math.MaxInt32, neg && v > -math.MinInt32:
		return 0, false
	case neg:
		return int32(-int64(v)), true
	}
	return int32(v), true
}

// Number parsing with the exact semantics of memcached's safe_strto* helpers
// (util.c) over glibc's strtol/strtoul/strtoull on a 64-bit build: leading
// C whitespace and a sign are accepted, the number may be followed by
// whitespace and anything after it, a value that overflows 64 bits fails,
// and narrower results are truncated, not range-checked (memcached stores
// "set k 4294967296 0 1" with flags 0).

// isCSpace is C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// cstrto parses like strtoull/strtoll in base 10: it returns the sign, the
// magnitude, the end offset, whether any digit was read and whether the
// magnitude overflowed 64 bits.
func cstrto(s []byte) (neg bool, mag uint64, end int, ok, overflow bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if mag > (math.MaxUint64-d)/10 {
			overflow = true
		}
		mag = mag*10 + d
	}
	if i == start {
		return false, 0, 0, false, false
	}
	return neg, mag, i, true, overflow
}

// validEnd is safe_strto*'s check on the end pointer: end of token, a
// whitespace byte or a NUL (memcached 1.6.45 reads the line by its length,
// so a NUL is a byte of the token, where strtol stops).
func validEnd(s []byte, end int) bool {
	return end == len(s) || isCSpace(s[end]) || s[end] == 0
}

// safeStrtoull is memcached's safe_strtoull: a negative number is refused
// only when the result looks negative as a signed value (so "-0" gives 0
// and "-18446744073709551615" gives 1), and then if the token holds a '-'
// anywhere.
func safeStrtoull(s []byte) (uint64, bool) {
	neg, mag, end, ok, overflow := cstrto(s)
	if !ok || overflow || !validEnd(s, end) {
		return 0, false
	}
	v := mag
	if neg {
		v = -mag
	}
	if int64(v) < 0 && hasMinus(s) {
		return 0, false
	}
	return v, true
}

// ParseUint32 reads a number argument as memcached's safe_strtoul does:
// strtoul (64-bit) truncated to 32 bits, so "4294967296" is 0 and "-1" is
// refused. Command arguments the parser leaves in Request.Args (stats
// cachedump, lru_crawler) are read with it.
func ParseUint32(s []byte) (uint32, bool) { return safeStrtoul(s) }

// safeStrtoul is memcached's safe_strtoul: strtoul (64-bit) truncated to 32 bits.
func safeStrtoul(s []byte) (uint32, bool) {
	v, ok := safeStrtoull(s)
	return uint32(v), ok
}

// ParseInt32 reads a signed number argument as memcached's safe_strtol
// does (slabs reassign's class ids).
func ParseInt32(s []byte) (int32, bool) { return safeStrtol(s) }

// safeStrtol is memcached's safe_strtol: strtol (64-bit, failing on
// overflow) truncated to 32 bits.
func safeStrtol(s []byte) (int32, bool) {
	neg, mag, end, ok, overflow := cstrto(s)
	if !ok || overflow || !validEnd(s, end) {
		return 0, false
	}
	if (!neg && mag > math.MaxInt64) || (neg && mag > 1<<63) {
		return 0, false
	}
	v := int64(mag)
	if neg {
		v = -v
	}
	return int32(v), true
}

func hasMinus(s []byte) bool {
	for _, c := range s {
		if c == '-' {
			return true
		}
	}
	return false
}
