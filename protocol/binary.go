package protocol

import "encoding/binary"

// This file frames requests of memcached's binary protocol (deprecated in
// memcached 1.6 but spoken by many deployed clients) as memcached 1.6.18's
// try_read_command_binary and dispatch_bin_command do: the same checks in
// the same order, the same bytes consumed (only a value is read past the
// extras and key; whatever else the body length declares is left in the
// stream, or swallowed for an unknown opcode, counted after the extras and
// key as memcached does), and the same connection closes. Body lengths are
// checked before anything is buffered: a value over the item size limit is
// answered and swallowed, never held in memory.

// Binary protocol opcodes (memcached's protocol_binary.h).
const (
	OpGet        uint8 = 0x00
	OpSet        uint8 = 0x01
	OpAdd        uint8 = 0x02
	OpReplace    uint8 = 0x03
	OpDelete     uint8 = 0x04
	OpIncrement  uint8 = 0x05
	OpDecrement  uint8 = 0x06
	OpQuit       uint8 = 0x07
	OpFlush      uint8 = 0x08
	OpGetQ       uint8 = 0x09
	OpNoop       uint8 = 0x0a
	OpVersion    uint8 = 0x0b
	OpGetK       uint8 = 0x0c
	OpGetKQ      uint8 = 0x0d
	OpAppend     uint8 = 0x0e
	OpPrepend    uint8 = 0x0f
	OpStat       uint8 = 0x10
	OpSetQ       uint8 = 0x11
	OpAddQ       uint8 = 0x12
	OpReplaceQ   uint8 = 0x13
	OpDeleteQ    uint8 = 0x14
	OpIncrementQ uint8 = 0x15
	OpDecrementQ uint8 = 0x16
	OpQuitQ      uint8 = 0x17
	OpFlushQ     uint8 = 0x18
	OpAppendQ    uint8 = 0x19
	OpPrependQ   uint8 = 0x1a
	OpVerbosity  uint8 = 0x1b // not served by memcached 1.6.18: unknown command
	OpTouch      uint8 = 0x1c
	OpGAT        uint8 = 0x1d
	OpGATQ       uint8 = 0x1e
	OpSASLList   uint8 = 0x20
	OpSASLAuth   uint8 = 0x21
	OpSASLStep   uint8 = 0x22
	OpGATK       uint8 = 0x23
	OpGATKQ      uint8 = 0x24
)

// Binary response statuses.
const (
	StatusOK             uint16 = 0x00
	StatusKeyNotFound    uint16 = 0x01
	StatusKeyExists      uint16 = 0x02
	StatusTooLarge       uint16 = 0x03
	StatusInvalid        uint16 = 0x04
	StatusNotStored      uint16 = 0x05
	StatusDeltaBadValue  uint16 = 0x06
	StatusAuthError      uint16 = 0x20
	StatusAuthContinue   uint16 = 0x21
	StatusUnknownCommand uint16 = 0x81
	StatusNoMemory       uint16 = 0x82
)

// Binary framing constants.
const (
	BinHeaderLen = 24
	BinReqMagic  = 0x80
	BinResMagic  = 0x81
	// maxSASLMechLen is memcached's MAX_SASL_MECH_LEN.
	maxSASLMechLen = 32
)

// errBinaryMagic: a binary connection sent something that is not a request
// header; memcached closes it without a reply.
var errBinaryMagic = &Error{Reply: "", Kind: ErrGeneric, Close: true}

// BinHeader is the header of a binary request. Request.Key is the key,
// Request.Data the value (set, add, replace, append, prepend, SASL data),
// Request.CAS the header's CAS, Request.Noreply whether the opcode is a quiet
// variant; the extras go to Request.Flags and Request.Exptime (set, add,
// replace: flags and expiration; touch, gat, flush: expiration), and
// Request.Delta with Initial (incr, decr: delta, initial value; Exptime is
// the expiration, 0xffffffff meaning "do not create").
type BinHeader struct {
	// Opcode is the opcode as sent; replies carry it.
	Opcode uint8
	// Cmd is Opcode with quiet variants mapped to their base command
	// (OpGetQ to OpGet, OpSetQ to OpSet, ...), as memcached dispatches them.
	Cmd     uint8
	ExtLen  uint8
	KeyLen  uint16
	BodyLen uint32
	Opaque  uint32
	// Initial is the initial value of incr and decr.
	Initial uint64
	// Status, when not StatusOK, is the error reply framing already decided:
	// the request is answered with it and not executed.
	Status uint16
	// Close asks for the connection to be closed after the reply.
	Close bool
}

// quietBase maps quiet opcodes to their base command.
var quietBase = [256]uint8{
	OpSetQ: OpSet, OpAddQ: OpAdd, OpReplaceQ: OpReplace, OpDeleteQ: OpDelete,
	OpIncrementQ: OpIncrement, OpDecrementQ: OpDecrement, OpQuitQ: OpQuit,
	OpFlushQ: OpFlush, OpAppendQ: OpAppend, OpPrependQ: OpPrepend, OpGetQ: OpGet,
	OpGetKQ: OpGetK, OpGATQ: OpGAT, OpGATKQ: OpGATK,
}

// binCommand returns the base command of opcode and whether it is quiet.
func binCommand(opcode uint8) (cmd uint8, quiet bool) {
	if b := quietBase[opcode]; b != 0 || opcode == OpGetQ {
		return b, true
	}
	return opcode, false
}

// binAuthFree reports whether an unauthenticated connection may send opcode.
func binAuthFree(opcode uint8) bool {
	switch opcode {
	case OpSASLList, OpSASLAuth, OpSASLStep, OpVersion:
		return true
	}
	return false
}

// binValid applies dispatch_bin_command's checks of extras, key and body
// lengths; a request failing them is answered "Invalid arguments" and its
// connection closed. Unknown commands pass.
func binValid(cmd uint8, ext, key int, body int64) bool {
	switch cmd {
	case OpVersion, OpNoop, OpQuit, OpSASLList:
		return ext == 0 && key == 0 && body == 0
	case OpFlush:
		return key == 0 && body == int64(ext) && (ext == 0 || ext == 4)
	case OpSet, OpAdd, OpReplace:
		return ext == 8 && key != 0 && body >= int64(key)+8
	case OpGet, OpGetK:
		return ext == 0 && body == int64(key) && key > 0
	case OpDelete:
		return key > 0 && ext == 0 && body == int64(key)
	case OpIncrement, OpDecrement:
		return key > 0 && ext == 20 && body == int64(key+ext)
	case OpAppend, OpPrepend:
		return key > 0 && ext == 0
	case OpStat:
		return ext == 0
	case OpSASLAuth, OpSASLStep:
		return ext == 0 && key != 0
	case OpTouch, OpGAT, OpGATK:
		return ext == 4 && key != 0
	}
	return true
}

// binKnown reports whether memcached 1.6.18 serves cmd (a base command).
func binKnown(cmd uint8) bool {
	switch cmd {
	case OpGet, OpSet, OpAdd, OpReplace, OpDelete, OpIncrement, OpDecrement, OpQuit,
		OpFlush, OpNoop, OpVersion, OpGetK, OpAppend, OpPrepend, OpStat, OpTouch,
		OpGAT, OpGATK, OpSASLList, OpSASLAuth, OpSASLStep:
		return true
	}
	return false
}

// parseBinary frames one binary request at the start of buf.
func (p *Parser) parseBinary(buf []byte, r *Request) int {
	if len(buf) < BinHeaderLen {
		p.need = BinHeaderLen
		return 0
	}
	if len(buf) < p.need {
		return 0
	}
	r.reset()
	r.Bin = BinHeader{}
	r.Auth = AuthNone
	if buf[0] != BinReqMagic {
		p.need = 0
		return fail(r, errBinaryMagic, len(buf))
	}
	h := &r.Bin
	h.Opcode = buf[1]
	h.KeyLen = binary.BigEndian.Uint16(buf[2:])
	h.ExtLen = buf[4]
	h.BodyLen = binary.BigEndian.Uint32(buf[8:])
	h.Opaque = binary.BigEndian.Uint32(buf[12:])
	r.CAS = binary.BigEndian.Uint64(buf[16:])
	h.Cmd, r.Noreply = binCommand(h.Opcode)
	r.Cmd = CmdBinary
	ext, key, body := int(h.ExtLen), int(h.KeyLen), int64(h.BodyLen)

	// memcached waits for the extras and key before these checks; every one
	// of them closes the connection, so deciding from the header alone only
	// answers sooner.
	switch {
	case int64(key) > body || int64(key+ext) > body:
		return p.binFail(buf, r, StatusUnknownCommand)
	case p.auth.check != nil && !p.auth.authed && !binAuthFree(h.Opcode):
		r.Auth = AuthRequired
		return p.binFail(buf, r, StatusAuthError)
	case key > MaxKeyLen || !binValid(h.Cmd, ext, key, body):
		return p.binFail(buf, r, StatusInvalid)
	}
	head := BinHeaderLen + ext + key
	if len(buf) < head {
		p.need = head
		return 0
	}
	p.need = 0
	extras := buf[BinHeaderLen : BinHeaderLen+ext]
	if key > 0 {
		r.Key = buf[BinHeaderLen+ext : head]
	}
	vlen := int(body) - ext - key // the rest of the body: a value, or unread
	switch h.Cmd {
	case OpSet, OpAdd, OpReplace:
		r.Flags = uint64(binary.BigEndian.Uint32(extras)) // 32 bits: the extras' size
		r.Exptime = int64(binary.BigEndian.Uint32(extras[4:]))
		return p.binValue(buf, r, head, vlen, StatusTooLarge)
	case OpAppend, OpPrepend:
		return p.binValue(buf, r, head, vlen, StatusTooLarge)
	case OpIncrement, OpDecrement:
		r.Delta = binary.BigEndian.Uint64(extras)
		h.Initial = binary.BigEndian.Uint64(extras[8:])
		r.Exptime = int64(binary.BigEndian.Uint32(extras[16:]))
	case OpTouch, OpGAT, OpGATK:
		r.Exptime = int64(binary.BigEndian.Uint32(extras))
	case OpFlush:
		if ext == 4 {
			r.Exptime = int64(binary.BigEndian.Uint32(extras))
		}
	case OpSASLList:
		if p.auth.check == nil {
			h.Status = StatusUnknownCommand
			break
		}
		p.auth.authed = false // memcached restarts its SASL state here
	case OpSASLAuth, OpSASLStep:
		return p.binSASL(buf, r, head, vlen)
	default:
		if !binKnown(h.Cmd) {
			// memcached swallows the body length again after having read
			// the extras and key.
			h.Status = StatusUnknownCommand
			p.swallow = int(body)
		}
	}
	return head
}

// binFail answers the request with status and closes the connection.
func (p *Parser) binFail(buf []byte, r *Request, status uint16) int {
	p.need = 0
	r.Bin.Status = status
	r.Bin.Close = true
	return len(buf)
}

// binValue frames the value of a storage request, or swallows it when
// memcached would refuse it as too large (status tooLarge).
func (p *Parser) binValue(buf []byte, r *Request, head, vlen int, tooLarge uint16) int {
	if p.tooLarge(len(r.Key), r.Flags, vlen) {
		r.Bin.Status = tooLarge
		p.swallow = vlen
		return head
	}
	end := head + vlen
	if len(buf) < end {
		p.need = end
		return 0
	}
	p.need = 0
	r.Data = buf[head:end]
	return end
}

// binSASL frames a SASL auth or step request and, when authentication is
// required, checks a PLAIN message. Without authentication these are
// unknown commands whose data is swallowed.
func (p *Parser) binSASL(buf []byte, r *Request, head, vlen int) int {
	h := &r.Bin
	switch {
	case p.auth.check == nil:
		h.Status = StatusUnknownCommand
		p.swallow = vlen
		return head
	case int(h.KeyLen) > maxSASLMechLen:
		h.Status = StatusInvalid
		p.swallow = vlen
		return head
	}
	end := p.binValue(buf, r, head, vlen, StatusNoMemory)
	if end == 0 || h.Status != StatusOK {
		return end
	}
	// PLAIN completes in one step; a step request never finds a started
	// exchange to continue.
	p.auth.authed = h.Cmd == OpSASLAuth && string(r.Key) == "PLAIN" && p.checkSASLPlain(r.Data)
	r.Auth = AuthFailed
	if p.auth.authed {
		r.Auth = AuthOK
	}
	return end
}
