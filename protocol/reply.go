package protocol

import "strconv"

// Replies of the classic text protocol. Full reply lines, "\r\n" included,
// are named Resp*; error lines (Reply* in errors.go) carry no "\r\n", like
// Error.Reply. Encoders append to dst and return the extended slice; they
// never allocate when dst has room.

// Fixed replies, byte for byte as memcached sends them.
const (
	RespEnd       = "END\r\n"
	RespStored    = "STORED\r\n"
	RespNotStored = "NOT_STORED\r\n"
	RespExists    = "EXISTS\r\n"
	RespNotFound  = "NOT_FOUND\r\n"
	RespDeleted   = "DELETED\r\n"
	RespTouched   = "TOUCHED\r\n"
	RespOK        = "OK\r\n"
	RespError     = "ERROR\r\n"
	RespReset     = "RESET\r\n" // stats reset
)

const crlf = "\r\n"

// AppendError appends e's reply line and "\r\n"; nothing when e.Reply is
// empty (memcached closes without a reply).
func AppendError(dst []byte, e *Error) []byte {
	if e.Reply == "" {
		return dst
	}
	return AppendLine(dst, e.Reply)
}

// AppendLine appends s and "\r\n".
func AppendLine(dst []byte, s string) []byte {
	dst = append(dst, s...)
	return append(dst, crlf...)
}

// AppendValueHeader appends "VALUE <key> <flags> <n>[ <cas>]\r\n", the line
// before a value of n bytes in a get (withCAS false) or gets reply.
func AppendValueHeader(dst, key []byte, flags uint64, n int, cas uint64, withCAS bool) []byte {
	dst = append(dst, "VALUE "...)
	dst = append(dst, key...)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, flags, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(n), 10)
	if withCAS {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, cas, 10)
	}
	return append(dst, crlf...)
}

// AppendValue appends "VALUE <key> <flags> <len>\r\n<data>\r\n".
func AppendValue(dst, key []byte, flags uint64, data []byte) []byte {
	dst = AppendValueHeader(dst, key, flags, len(data), 0, false)
	dst = append(dst, data...)
	return append(dst, crlf...)
}

// AppendValueCAS appends "VALUE <key> <flags> <len> <cas>\r\n<data>\r\n".
func AppendValueCAS(dst, key []byte, flags uint64, data []byte, cas uint64) []byte {
	dst = AppendValueHeader(dst, key, flags, len(data), cas, true)
	dst = append(dst, data...)
	return append(dst, crlf...)
}

// AppendUint appends "<v>\r\n", the reply to incr and decr.
func AppendUint(dst []byte, v uint64) []byte {
	dst = strconv.AppendUint(dst, v, 10)
	return append(dst, crlf...)
}

// AppendVersion appends "VERSION <version>\r\n". Clients parse the version
// as dotted numbers, so it should look like "1.6.18".
func AppendVersion(dst []byte, version string) []byte {
	dst = append(dst, "VERSION "...)
	dst = append(dst, version...)
	return append(dst, crlf...)
}

// AppendStatString appends "STAT <name> <value>\r\n".
func AppendStatString(dst []byte, name, value string) []byte {
	dst = appendStatName(dst, name)
	dst = append(dst, value...)
	return append(dst, crlf...)
}

// AppendStatUint appends "STAT <name> <v>\r\n".
func AppendStatUint(dst []byte, name string, v uint64) []byte {
	dst = appendStatName(dst, name)
	dst = strconv.AppendUint(dst, v, 10)
	return append(dst, crlf...)
}

// AppendStatInt appends "STAT <name> <v>\r\n".
func AppendStatInt(dst []byte, name string, v int64) []byte {
	dst = appendStatName(dst, name)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, crlf...)
}

func appendStatName(dst []byte, name string) []byte {
	dst = append(dst, "STAT "...)
	dst = append(dst, name...)
	return append(dst, ' ')
}
