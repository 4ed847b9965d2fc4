package protocol

// Error is a request that cannot be executed, with the exact reply memcached
// sends for it. It is carried in Request.Err (Cmd == CmdError), never returned
// as a Go error from the hot path.
type Error struct {
	// Reply is the full reply line without "\r\n", e.g. "CLIENT_ERROR bad data chunk".
	// It is empty when memcached writes nothing before closing (see Close).
	Reply string
	// Kind classifies the error for the handler (e.g. ErrTooLarge, where
	// memcached also unlinks the key of a failed set).
	Kind ErrorKind
	// Close asks the caller to close the connection after writing Reply
	// (memcached closes on e.g. an overlong line without a newline).
	Close bool
	// Silent is true where memcached honours noreply for this error (out_string
	// rather than out_errstring): the handler writes nothing when the request
	// also had noreply.
	Silent bool
	// Was1618 is, for an error memcached 1.6.18 did not send (tandem answers
	// as the newest memcached; see transcript.Differences), the error 1.6.18
	// sent instead. Differential tests against 1.6.18 compare with it.
	Was1618 *Error
}

// ErrorKind classifies protocol errors.
type ErrorKind uint8

// Error kinds.
const (
	ErrGeneric  ErrorKind = iota // "ERROR"-style and CLIENT_ERROR format errors
	ErrTooLarge                  // value longer than the item size limit; data swallowed
	ErrBadChunk                  // data block not terminated by "\r\n"
	// ErrLineTooLong: a request line longer than memcached can hold; Reply is
	// empty (memcached writes nothing) and Close is set.
	ErrLineTooLong
)

// Error lines of the classic text protocol, byte for byte as memcached 1.6.18
// sends them, without the trailing "\r\n" (the convention of Error.Reply).
// Write one with AppendError or append it followed by CRLF.
const (
	ReplyError            = "ERROR"
	ReplyBadFormat        = "CLIENT_ERROR bad command line format"
	ReplyBadCommandLine   = "CLIENT_ERROR bad command line" // stats cachedump with too few arguments
	ReplyBadDataChunk     = "CLIENT_ERROR bad data chunk"
	ReplyTooLarge         = "SERVER_ERROR object too large for cache"
	ReplyOutOfMemoryStore = "SERVER_ERROR out of memory storing object"
	ReplyOutOfMemory      = "SERVER_ERROR out of memory" // incr/decr could not allocate
	ReplyOutOfMemoryGet   = "SERVER_ERROR out of memory writing get response"
	ReplyOutOfMemoryStats = "SERVER_ERROR out of memory writing stats"
	ReplyOutOfMemoryRead  = "SERVER_ERROR out of memory reading request"
	ReplyNonNumeric       = "CLIENT_ERROR cannot increment or decrement non-numeric value"
	ReplyInvalidDelta     = "CLIENT_ERROR invalid numeric delta argument"
	ReplyInvalidExptime   = "CLIENT_ERROR invalid exptime argument"
	ReplyDeleteUsage      = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
	ReplyFlushDisabled    = "CLIENT_ERROR flush_all not allowed"
	ReplyShutdownDisabled = "SERVER_ERROR: shutdown not enabled" // memcached 1.6.45 (1.6.18: "ERROR: shutdown not enabled")
	ReplyShutdownMode     = "CLIENT_ERROR invalid shutdown mode"
	ReplyStatsDetailUsage = "CLIENT_ERROR usage: stats detail on|off|dump"
	ReplyCachedumpDenied  = "CLIENT_ERROR stats cachedump not allowed"
	ReplyMetadumpDenied   = "ERROR metadump not allowed"
	ReplyIllegalSlabID    = "CLIENT_ERROR Illegal slab id"
	ReplyTooManyConns     = "ERROR Too many open connections"
	ReplyUnhandledStore   = "SERVER_ERROR Unhandled storage type."
)

// Shared, read-only errors the text parser puts in Request.Err. Every one of
// them is sent by memcached with out_string, which honours noreply once the
// command has seen it, so all are Silent; Request.Noreply tells whether the
// noreply token had been recognised when the error happened; errTooShort
// is the exception.
var (
	errUnknown = &Error{Reply: ReplyError, Kind: ErrGeneric, Silent: true}
	// errTooShort is memcached 1.6.45's reply to a line too short to hold a
	// command and to a storage line with too few tokens (1.6.18 answered
	// both ERROR). Its parser fails before it looks for noreply, so it is
	// always sent.
	errTooShort = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Was1618: errUnknown}
	// errTooFew is memcached 1.6.45's reply to a get, gets, gat, gats,
	// incr, decr, touch or delete without its key or number (1.6.18:
	// ERROR; END to a gat with its exptime only). Sent whatever noreply says.
	errTooFew = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Was1618: errUnknown}
	// errNoLevel: a verbosity without its level (1.6.18: ERROR).
	errNoLevel = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Silent: true, Was1618: errUnknown}
	// errBadLength: a storage line whose length does not parse as memcached
	// 1.6.45 reads it (digits only, 32 bits), sent whatever noreply says
	// (1.6.18 honoured noreply).
	errBadLength = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Was1618: errBadFormat}
	// errBadLengthCas: the same on a cas without its unique (1.6.18: ERROR).
	errBadLengthCas = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Was1618: errUnknownLoud}
	// errCasNoUnique: a cas without its unique (1.6.18: ERROR, whatever
	// noreply said); its data block is swallowed.
	errCasNoUnique = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Silent: true, Was1618: errUnknownLoud}
	// errUnknownQuiet: an unknown command whose last token is noreply, which
	// memcached 1.6.45 silences (1.6.18 answered ERROR).
	errUnknownQuiet = &Error{Reply: ReplyError, Kind: ErrGeneric, Silent: true, Was1618: errUnknownLoud}
	errUnknownLoud  = &Error{Reply: ReplyError, Kind: ErrGeneric}
	// errUnknownWasHTTP: a line of one token starting with "HTTP/", on which
	// memcached 1.6.18 closed the connection (1.6.45 needs two tokens).
	errUnknownWasHTTP = &Error{Reply: ReplyError, Kind: ErrGeneric, Silent: true, Was1618: errHTTPRequest}
	errBadFormat      = &Error{Reply: ReplyBadFormat, Kind: ErrGeneric, Silent: true}
	errBadDataChunk   = &Error{Reply: ReplyBadDataChunk, Kind: ErrBadChunk, Silent: true}
	errTooLarge       = &Error{Reply: ReplyTooLarge, Kind: ErrTooLarge, Silent: true}
	errInvalidExptime = &Error{Reply: ReplyInvalidExptime, Kind: ErrGeneric, Silent: true}
	errInvalidDelta   = &Error{Reply: ReplyInvalidDelta, Kind: ErrGeneric, Silent: true}
	errDeleteUsage    = &Error{Reply: ReplyDeleteUsage, Kind: ErrGeneric, Silent: true}
	// errLineTooLong: memcached closes the connection without a reply when a
	// line has no "\n" after 2048 bytes (unless it is a get/gets line).
	errLineTooLong = &Error{Reply: "", Kind: ErrLineTooLong, Close: true}
	// errHTTPRequest: memcached closes the connection without a reply on an
	// unknown command that looks like an HTTP request (see parseLine).
	errHTTPRequest = &Error{Reply: "", Kind: ErrGeneric, Close: true}
	// errHTTPRequestNew: the same for a command name memcached 1.6.18
	// answered ERROR (see isHTTPRequest1618).
	errHTTPRequestNew = &Error{Reply: "", Kind: ErrGeneric, Close: true, Was1618: errUnknown}
)
