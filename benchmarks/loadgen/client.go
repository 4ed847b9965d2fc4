package loadgen

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Conn is one memcached text-protocol connection. Requests are appended to an
// internal write buffer (AppendSet, AppendGet, ...) and sent with Flush; the
// replies are then read in order with ReadStore and ReadGet. Set, Get and the
// other blocking helpers do all three steps for one request.
//
// A Conn is not safe for concurrent use: one goroutine owns it.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	wbuf    []byte
	timeout time.Duration // per Flush and per read; 0 means none
	deadl   time.Time     // read deadline currently armed
}

// readBufSize is large enough for any reply header line and for most values,
// so small values are parsed without extra copies.
const readBufSize = 64 << 10

// Dial connects to addr (host:port) over TCP. timeout bounds the dial and,
// later, every Flush and every reply read (0 means no bound).
func Dial(addr string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("loadgen: dial %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return NewConn(nc, timeout), nil
}

// NewConn wraps an established connection (for example one end of
// net.Pipe). timeout bounds every Flush and reply read (0 means no bound).
func NewConn(nc net.Conn, timeout time.Duration) *Conn {
	return &Conn{
		nc:      nc,
		r:       bufio.NewReaderSize(nc, readBufSize),
		wbuf:    make([]byte, 0, 4096),
		timeout: timeout,
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Buffered reports how many request bytes are waiting for Flush.
func (c *Conn) Buffered() int { return len(c.wbuf) }

// AppendSet appends "set <key> <flags> <exptime> <len>\r\n<value>\r\n".
// The bytes of key and value are copied.
func (c *Conn) AppendSet(key []byte, flags uint32, exptime int64, value []byte) {
	b := append(c.wbuf, "set "...)
	b = append(b, key...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(flags), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, exptime, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(value)), 10)
	b = append(b, "\r\n"...)
	b = append(b, value...)
	c.wbuf = append(b, "\r\n"...)
}

// AppendGet appends "get <key>\r\n".
func (c *Conn) AppendGet(key []byte) {
	b := append(c.wbuf, "get "...)
	b = append(b, key...)
	c.wbuf = append(b, "\r\n"...)
}

// AppendRaw appends a raw command line; line must end with "\r\n".
func (c *Conn) AppendRaw(line string) { c.wbuf = append(c.wbuf, line...) }

// Flush writes every buffered request in one write.
func (c *Conn) Flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	if c.timeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	}
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		return fmt.Errorf("loadgen: write: %w", err)
	}
	return nil
}

// armRead sets the read deadline for the next reply. Re-arming on every reply
// would cost a syscall-free but non-trivial runtime call, so the deadline is
// only pushed forward once half of it has elapsed.
func (c *Conn) armRead() {
	if c.timeout <= 0 {
		return
	}
	now := time.Now()
	if c.deadl.IsZero() || c.deadl.Sub(now) < c.timeout/2 {
		c.deadl = now.Add(c.timeout)
		_ = c.nc.SetReadDeadline(c.deadl)
	}
}

// Set stores value under key (flags 0, no expiry) and waits for the reply.
func (c *Conn) Set(key, value []byte) (StoreStatus, error) {
	c.AppendSet(key, 0, 0, value)
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return c.ReadStore()
}

// Get fetches key. The returned value aliases dst's storage when it fits, as
// described in ReadGet.
func (c *Conn) Get(key, dst []byte) (GetReply, error) {
	c.AppendGet(key)
	if err := c.Flush(); err != nil {
		return GetReply{}, err
	}
	return c.ReadGet(dst)
}

// Version sends "version" and returns the server's version string.
func (c *Conn) Version() (string, error) {
	line, err := c.roundTripLine("version\r\n")
	if err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(line, "VERSION ")
	if !ok {
		return "", fmt.Errorf("%w: version reply %q", ErrProtocol, line)
	}
	return v, nil
}

// FlushAll sends "flush_all" and expects "OK".
func (c *Conn) FlushAll() error {
	line, err := c.roundTripLine("flush_all\r\n")
	if err != nil {
		return err
	}
	if line != "OK" {
		return fmt.Errorf("%w: flush_all reply %q", ErrProtocol, line)
	}
	return nil
}

// Stats sends "stats" and returns its name/value pairs.
func (c *Conn) Stats() (map[string]string, error) {
	c.AppendRaw("stats\r\n")
	if err := c.Flush(); err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for {
		line, err := c.readLine()
		if err != nil {
			return nil, err
		}
		if string(line) == "END" {
			return out, nil
		}
		if err := replyError(line); err != nil {
			return nil, err
		}
		rest, ok := strings.CutPrefix(string(line), "STAT ")
		if !ok {
			return nil, fmt.Errorf("%w: stats line %q", ErrProtocol, line)
		}
		name, val, _ := strings.Cut(rest, " ")
		out[name] = val
	}
}

func (c *Conn) roundTripLine(cmd string) (string, error) {
	c.AppendRaw(cmd)
	if err := c.Flush(); err != nil {
		return "", err
	}
	line, err := c.readLine()
	if err != nil {
		return "", err
	}
	if err := replyError(line); err != nil {
		return "", err
	}
	return string(line), nil
}

// IsReplyError reports whether err is a server error reply (ERROR,
// CLIENT_ERROR, SERVER_ERROR): the connection is still in sync after it.
// Any other error from a Conn leaves the stream in an unknown state.
func IsReplyError(err error) bool {
	var re *ReplyError
	return errors.As(err, &re)
}
