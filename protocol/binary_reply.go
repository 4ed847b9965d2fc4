package protocol

import "encoding/binary"

// BinResponse is the header of a binary response.
type BinResponse struct {
	Opcode  uint8
	Status  uint16
	ExtLen  uint8
	KeyLen  uint16
	BodyLen uint32 // extras + key + value
	Opaque  uint32
	CAS     uint64
}

// AppendBinHeader appends the 24-byte response header h.
func AppendBinHeader(dst []byte, h BinResponse) []byte {
	var b [BinHeaderLen]byte
	b[0] = BinResMagic
	b[1] = h.Opcode
	binary.BigEndian.PutUint16(b[2:], h.KeyLen)
	b[4] = h.ExtLen
	// b[5] data type: raw bytes (0)
	binary.BigEndian.PutUint16(b[6:], h.Status)
	binary.BigEndian.PutUint32(b[8:], h.BodyLen)
	binary.BigEndian.PutUint32(b[12:], h.Opaque)
	binary.BigEndian.PutUint64(b[16:], h.CAS)
	return append(dst, b[:]...)
}

// BinStatusText is memcached's message for an error status (the body of
// its error responses).
func BinStatusText(status uint16) string {
	switch status {
	case StatusNoMemory:
		return "Out of memory"
	case StatusUnknownCommand:
		return "Unknown command"
	case StatusKeyNotFound:
		return "Not found"
	case StatusInvalid:
		return "Invalid arguments"
	case StatusKeyExists:
		return "Data exists for key."
	case StatusTooLarge:
		return "Too large."
	case StatusDeltaBadValue:
		return "Non-numeric server-side value for incr or decr"
	case StatusNotStored:
		return "Not stored."
	case StatusAuthError:
		return "Auth failure."
	}
	return "UNHANDLED ERROR"
}

// AppendBinError appends an error response for opcode with memcached's
// message for status, or msg when it is not empty.
func AppendBinError(dst []byte, opcode uint8, status uint16, opaque uint32, msg string) []byte {
	if msg == "" {
		msg = BinStatusText(status)
	}
	dst = AppendBinHeader(dst, BinResponse{Opcode: opcode, Status: status, BodyLen: uint32(len(msg)), Opaque: opaque})
	return append(dst, msg...)
}

// AppendBinValue appends a response carrying extras, key and value.
func AppendBinValue(dst []byte, h BinResponse, extras, key, value []byte) []byte {
	h.ExtLen = uint8(len(extras))
	h.KeyLen = uint16(len(key))
	h.BodyLen = uint32(len(extras) + len(key) + len(value))
	dst = AppendBinHeader(dst, h)
	dst = append(dst, extras...)
	dst = append(dst, key...)
	return append(dst, value...)
}

// AppendBinRequest appends a binary request, what a client sends: the header
// for opcode, opaque and cas (vbucket 0), then extras, key and value. The
// server never sends one; tests and tools build requests with it.
func AppendBinRequest(dst []byte, opcode uint8, opaque uint32, cas uint64, extras, key, value []byte) []byte {
	start := len(dst)
	dst = AppendBinValue(dst, BinResponse{Opcode: opcode, Opaque: opaque, CAS: cas}, extras, key, value)
	dst[start] = BinReqMagic
	return dst
}
