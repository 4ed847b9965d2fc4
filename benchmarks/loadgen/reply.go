package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrProtocol marks a reply that does not follow the text protocol. After it
// the connection is out of sync and must be closed.
var ErrProtocol = errors.New("loadgen: protocol error")

// ReplyError is an error line from the server: "ERROR", "CLIENT_ERROR <msg>"
// or "SERVER_ERROR <msg>". The connection stays in sync.
type ReplyError struct {
	Kind string // "ERROR", "CLIENT_ERROR" or "SERVER_ERROR"
	Msg  string
}

// Error implements error.
func (e *ReplyError) Error() string {
	if e.Msg == "" {
		return "loadgen: server replied " + e.Kind
	}
	return "loadgen: server replied " + e.Kind + " " + e.Msg
}

// StoreStatus is the reply to a storage command.
type StoreStatus uint8

// Storage replies.
const (
	Stored StoreStatus = iota + 1
	NotStored
	Exists
	NotFound
)

var storeNames = [...]string{"", "STORED", "NOT_STORED", "EXISTS", "NOT_FOUND"}

// String returns the reply text.
func (s StoreStatus) String() string {
	if int(s) < len(storeNames) && s != 0 {
		return storeNames[s]
	}
	return "StoreStatus(" + strconv.Itoa(int(s)) + ")"
}

// GetReply is the reply to a single-key get.
type GetReply struct {
	Hit   bool
	Key   []byte // valid until the next read on the Conn
	Flags uint32
	Value []byte // aliases the dst passed to ReadGet when it had room
}

// readLine returns the next line without its "\r\n". The bytes are valid
// until the next read.
func (c *Conn) readLine() ([]byte, error) {
	c.armRead()
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("loadgen: read: %w", err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line without CRLF %q", ErrProtocol, line)
	}
	return line[:len(line)-2], nil
}

// replyError turns an error line into a *ReplyError, or returns nil.
func replyError(line []byte) error {
	switch {
	case string(line) == "ERROR":
		return &ReplyError{Kind: "ERROR"}
	case bytes.HasPrefix(line, []byte("CLIENT_ERROR")):
		return &ReplyError{Kind: "CLIENT_ERROR", Msg: string(bytes.TrimSpace(line[len("CLIENT_ERROR"):]))}
	case bytes.HasPrefix(line, []byte("SERVER_ERROR")):
		return &ReplyError{Kind: "SERVER_ERROR", Msg: string(bytes.TrimSpace(line[len("SERVER_ERROR"):]))}
	}
	return nil
}

// ReadStore reads the reply to a storage command.
func (c *Conn) ReadStore() (StoreStatus, error) {
	line, err := c.readLine()
	if err != nil {
		return 0, err
	}
	switch string(line) {
	case "STORED":
		return Stored, nil
	case "NOT_STORED":
		return NotStored, nil
	case "EXISTS":
		return Exists, nil
	case "NOT_FOUND":
		return NotFound, nil
	}
	if err := replyError(line); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%w: storage reply %q", ErrProtocol, line)
}

// ReadGet reads the reply to a single-key get: either "END" (a miss) or one
// VALUE block followed by "END". The value is read into dst's storage,
// growing it when it is too small; the returned Value is only valid until
// dst is reused. Key is valid until the next read on c.
func (c *Conn) ReadGet(dst []byte) (GetReply, error) {
	line, err := c.readLine()
	if err != nil {
		return GetReply{}, err
	}
	if string(line) == "END" {
		return GetReply{}, nil
	}
	rest, ok := bytes.CutPrefix(line, []byte("VALUE "))
	if !ok {
		if err := replyError(line); err != nil {
			return GetReply{}, err
		}
		return GetReply{}, fmt.Errorf("%w: get reply %q", ErrProtocol, line)
	}
	key, flags, n, err := parseValueLine(rest)
	if err != nil {
		return GetReply{}, err
	}
	// key aliases the reader's buffer, which the value read below may
	// overwrite: keep a copy at the end of dst's storage instead.
	need := n + 2 + len(key)
	if cap(dst) < need {
		dst = make([]byte, need)
	}
	dst = dst[:need]
	keyCopy := dst[n+2 : need]
	copy(keyCopy, key)
	if _, err := io.ReadFull(c.r, dst[:n+2]); err != nil {
		return GetReply{}, fmt.Errorf("loadgen: read value: %w", err)
	}
	if dst[n] != '\r' || dst[n+1] != '\n' {
		return GetReply{}, fmt.Errorf("%w: value of %d bytes not followed by CRLF", ErrProtocol, n)
	}
	end, err := c.readLine()
	if err != nil {
		return GetReply{}, err
	}
	if string(end) != "END" {
		return GetReply{}, fmt.Errorf("%w: expected END after value, got %q", ErrProtocol, end)
	}
	return GetReply{Hit: true, Key: keyCopy, Flags: flags, Value: dst[:n]}, nil
}

// parseValueLine parses "<key> <flags> <bytes> [<cas>]" without allocating.
func parseValueLine(b []byte) (key []byte, flags uint32, n int, err error) {
	var tok [4][]byte
	nt := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, ' ')
		if i < 0 {
			i = len(b)
		}
		if i > 0 {
			if nt == len(tok) {
				nt++
				break
			}
			tok[nt] = b[:i]
			nt++
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	fl, ok1 := atou(tok[1], 1<<32-1)
	sz, ok2 := atou(tok[2], 1<<31-1)
	if (nt != 3 && nt != 4) || !ok1 || !ok2 {
		return nil, 0, 0, fmt.Errorf("%w: bad VALUE line", ErrProtocol)
	}
	return tok[0], uint32(fl), int(sz), nil
}

// atou parses a non-empty decimal number no larger than limit.
func atou(b []byte, limit uint64) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
		if v > limit {
			return 0, false
		}
	}
	return v, true
}
