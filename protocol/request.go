package protocol

// Command identifies a parsed request.
type Command uint8

// Commands of the classic text protocol, the meta protocol and the binary protocol.
const (
	// CmdNone means the call consumed bytes but produced nothing to execute
	// (a swallowed data block of a rejected value). Blank lines are not
	// ignored: memcached answers them with ERROR, and so does the parser.
	CmdNone Command = iota
	// CmdError is a request that failed to parse; Request.Err holds the reply.
	CmdError

	CmdGet
	CmdGets
	CmdGat
	CmdGats
	CmdSet
	CmdAdd
	CmdReplace
	CmdAppend
	CmdPrepend
	CmdCas
	CmdDelete
	CmdIncr
	CmdDecr
	CmdTouch
	CmdFlushAll
	CmdVersion
	CmdVerbosity
	CmdStats
	CmdQuit
	CmdShutdown
	// CmdLruCrawler is memcached's lru_crawler command; Request.Args holds
	// its arguments. tandem has no LRU crawler: the handler answers it as
	// memcached does with dumps disabled (-X), or ERROR.
	CmdLruCrawler

	// Meta protocol (see meta.go).
	CmdMetaGet
	CmdMetaSet
	CmdMetaDelete
	CmdMetaArithmetic
	CmdMetaNoop
	CmdMetaDebug

	// CmdBinary is a binary-protocol request; Request.Bin holds its header (see binary.go).
	CmdBinary

	// CmdTextAuth is an authentication attempt of the text protocol on a
	// server that requires it (memcached -Y: "set <any> <flags> <exptime>
	// <n>" with "user password" as data); Request.Auth holds the outcome
	// (see auth.go).
	CmdTextAuth

	// Admin commands of memcached 1.6.18 whose arguments the handler parses
	// (Request.Args holds them, Line the whole line): "slabs reassign|automove",
	// "watch" (log streaming) and "cache_memlimit".
	CmdSlabs
	CmdWatch
	CmdCacheMemlimit
	// CmdRefreshCerts is memcached's refresh_certs: reload the TLS
	// certificate, key and CA files (Request.Noreply as for other commands).
	CmdRefreshCerts
	// CmdLru is memcached's "lru mode|temp_ttl|tune ..." (Request.Args
	// holds the arguments).
	CmdLru
)

// Dialect is the wire protocol of a connection.
type Dialect uint8

// Dialects. A connection is text (classic and meta) unless its first byte is 0x80.
const (
	DialectUnknown Dialect = iota
	DialectText
	DialectBinary
)

// MaxKeyLen is memcached's key length limit in bytes.
const MaxKeyLen = 250

// Request is one parsed request.
//
// Byte slices alias the buffer passed to the parser and stay valid only while
// that buffer is unchanged; callers that keep a Request longer must copy the
// bytes and call Rebase.
type Request struct {
	Cmd Command

	// Line is the command line of a text request without its line ending
	// (the data block of a storage command is not part of it), for logging
	// (-vv). It is nil for binary requests.
	Line []byte

	// Key is the first (for storage, arithmetic, delete, touch: the only) key.
	Key []byte
	// Keys holds every key of a retrieval command (Keys[0] == Key). Its
	// backing array is reused across Parse calls on the same Request.
	Keys [][]byte

	Flags   uint64 // client flags; above 32 bits only with Parser.SetLargeClientFlags
	Exptime int64  // as memcached reads it (strtol truncated to 32 bits); the cache interprets memcached's rules
	Delta   uint64 // incr/decr amount; the level for verbosity
	CAS     uint64 // cas unique for the cas command
	Data    []byte // storage value without the trailing "\r\n"
	Noreply bool

	// Args holds the raw arguments of stats, lru_crawler, slabs, watch, cache_memlimit, verbosity, flush_all and shutdown
	// (for verbosity and flush_all without a trailing noreply, which sets
	// Noreply; memcached ignores noreply on stats and shutdown, so there it
	// stays an argument). At most 22 are kept, memcached's token limit.
	// Reused like Keys.
	Args [][]byte

	// Err is set when Cmd == CmdError. It points to a shared, read-only
	// value: never modify it.
	Err *Error

	// Meta holds the flags of a meta command (CmdMeta*; see meta.go). Its
	// Opaque slice aliases the input like Key.
	Meta MetaArgs
	// Bin holds the header of a binary request (CmdBinary; see binary.go).
	Bin BinHeader
	// Auth is the outcome of an authentication step decided while framing
	// (CmdTextAuth, binary SASL requests, and binary requests refused for
	// want of authentication); AuthNone otherwise.
	Auth AuthResult

	// FailedCmd is, when Cmd == CmdError, the command whose arguments memcached
	// rejected after recognising it (it entered its process_*_command), e.g.
	// CmdSet for a value too large, a bad data chunk or a bad length, or
	// CmdFlushAll for a bad delay. The fields parsed before the failure (Key,
	// Flags, Exptime, Noreply) stay set. It is CmdNone for unknown commands and
	// wrong token counts. The handler uses it where memcached's reply or side
	// effects depend on the command: a too-large set unlinks Key, and with
	// flush_all disabled (-F) memcached answers "CLIENT_ERROR flush_all not
	// allowed" before looking at the delay.
	FailedCmd Command
}

// Rebase re-points every slice of r, which aliases from, at the same offsets
// in to. to must hold a copy of from's bytes starting at from's first byte
// (that is, to[i] == from[i] for every offset used). It relies on slices of
// from sharing its backing array, so the offset of s is cap(from) - cap(s).
func (r *Request) Rebase(from, to []byte) {
	re := func(s []byte) []byte {
		if s == nil {
			return nil
		}
		off := cap(from) - cap(s)
		return to[off : off+len(s)]
	}
	r.Key = re(r.Key)
	r.Data = re(r.Data)
	for i := range r.Keys {
		r.Keys[i] = re(r.Keys[i])
	}
	for i := range r.Args {
		r.Args[i] = re(r.Args[i])
	}
	r.Line = re(r.Line)
	// Only a meta request's Opaque is a slice of the input; for any other
	// request it may be left over from an earlier meta request parsed into
	// the same Request, so it is dropped rather than re-pointed.
	if r.isMeta() {
		r.Meta.Opaque = re(r.Meta.Opaque)
	} else {
		r.Meta.Opaque = nil
	}
}
