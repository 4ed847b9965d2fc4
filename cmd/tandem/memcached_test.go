package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"time"
)

// sentinel is sent after a case so the reader knows when the reply is
// complete; its reply is stripped before comparison.
const (
	sentinel      = "version\r\n"
	sentinelReply = "VERSION 1.6.18\r\n"
)

// exchange sends req on a fresh connection followed by the sentinel and
// returns everything received before the sentinel's reply, and whether the
// server closed the connection.
func exchange(addr, req string) (reply string, closed bool, err error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req+sentinel); err != nil {
		// The server may close while we write (e.g. an overlong line).
		closed = true
	}
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for {
		if bytes.HasSuffix(got.Bytes(), []byte(sentinelReply)) {
			return string(got.Bytes()[:got.Len()-len(sentinelReply)]), false, nil
		}
		// A desynchronised stream may swallow the sentinel: stop after a
		// quiet period.
		_ = c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got.String(), false, nil
			}
			return got.String(), true, nil
		}
	}
}
