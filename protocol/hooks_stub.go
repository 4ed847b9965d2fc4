package protocol

// Stubs for the meta and binary parsers, replaced by meta.go and binary.go.

// parseMeta parses a meta command line (first token mg, ms, md, ma, mn or
// me). buf is the input starting at the line; buf[lineEnd:] begins with
// "\r\n" or "\n" (see lineNext and textLine). It returns the bytes consumed,
// 0 when more input is needed.
func (p *Parser) parseMeta(buf []byte, lineEnd int, r *Request) int {
	r.Cmd = CmdError
	r.Err = errUnknown
	return lineNext(buf, lineEnd)
}

// parseBinary parses one binary-protocol request at the start of buf.
func (p *Parser) parseBinary(buf []byte, r *Request) int {
	r.reset()
	r.Cmd = CmdError
	r.Err = errBinaryStub
	return len(buf)
}

var errBinaryStub = &Error{Reply: ReplyError, Close: true}
