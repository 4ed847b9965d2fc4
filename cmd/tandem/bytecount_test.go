package main

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol"
)

// byteConn is one connection that counts what it sends and receives.
type byteConn struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	sent int
	got  int
}

func newByteConn(t *testing.T, addr string) *byteConn {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &byteConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (b *byteConn) send(s string) {
	if _, err := io.WriteString(b.c, s); err != nil {
		b.t.Fatal(err)
	}
	b.sent += len(s)
}

// readText reads text replies up to and including the line end.
func (b *byteConn) readText(end string) string {
	var sb strings.Builder
	for !strings.HasSuffix(sb.String(), end) {
		line, err := b.r.ReadString('\n')
		if err != nil {
			b.t.Fatalf("after %q: %v", sb.String(), err)
		}
		sb.WriteString(line)
	}
	b.got += sb.Len()
	return sb.String()
}

// readBin reads one binary response packet and returns its key and value.
func (b *byteConn) readBin() (key, value string) {
	hdr := make([]byte, 24)
	if _, err := io.ReadFull(b.r, hdr); err != nil {
		b.t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[8:12]))
	if _, err := io.ReadFull(b.r, body); err != nil {
		b.t.Fatal(err)
	}
	b.got += 24 + len(body)
	keyLen, extLen := int(binary.BigEndian.Uint16(hdr[2:4])), int(hdr[4])
	return string(body[extLen : extLen+keyLen]), string(body[extLen+keyLen:])
}

// textCounts sends "stats" and returns bytes_read and bytes_written.
func (b *byteConn) textCounts() (read, written int) {
	b.send("stats\r\n")
	st := b.readText("END\r\n")
	val := func(name string) int {
		i := strings.Index(st, "STAT "+name+" ")
		if i < 0 {
			b.t.Fatalf("no %s in %q", name, st)
		}
		v, _ := strconv.Atoi(strings.Fields(st[i:])[2])
		return v
	}
	return val("bytes_read"), val("bytes_written")
}

// binCounts sends a binary stat request and returns bytes_read and
// bytes_written.
func (b *byteConn) binCounts() (read, written int) {
	b.send(binRequest(protocol.OpStat, "", "", "", 0, 0))
	st := map[string]string{}
	for {
		k, v := b.readBin()
		if k == "" {
			break
		}
		st[k] = v
	}
	r, _ := strconv.Atoi(st["bytes_read"])
	w, _ := strconv.Atoi(st["bytes_written"])
	return r, w
}

// TestByteCountersExact checks bytes_read and bytes_written to the byte
// for a known text, meta and binary exchange, on memcached 1.6.18 and on
// tandem in every mode: between two "stats" on one connection the counters
// grow by exactly what the connection sent (the second stats request
// included) and received (the first stats reply included).
func TestByteCountersExact(t *testing.T) {
	type exchange struct {
		name string
		run  func(b *byteConn)
		bin  bool
	}
	exchanges := []exchange{
		{"text", func(b *byteConn) {
			b.send("set bc 0 0 5\r\nhello\r\nget bc\r\ndelete nothere\r\n")
			b.readText("NOT_FOUND\r\n")
		}, false},
		{"meta", func(b *byteConn) {
			b.send("ms mbc 5 T0\r\nhello\r\nmg mbc v f t\r\nmn\r\n")
			b.readText("MN\r\n")
		}, false},
		{"binary", func(b *byteConn) {
			b.send(binRequest(protocol.OpSet, "bbc", be32s(0)+be32s(0), "hello", 1, 0))
			b.send(binRequest(protocol.OpGet, "bbc", "", "", 2, 0))
			b.readBin()
			b.readBin()
		}, true},
	}
	// A server per exchange: a closed connection's counts would land at
	// a moment the test does not know.
	check := func(t *testing.T, start func() string) {
		for _, ex := range exchanges {
			t.Run(ex.name, func(t *testing.T) {
				b := newByteConn(t, start())
				counts := b.textCounts
				if ex.bin {
					counts = b.binCounts
				}
				r1, w1 := counts()
				sent, first := b.sent, b.got // first: the first stats reply
				ex.run(b)
				replies := b.got - first
				r2, w2 := counts()
				// The second stats request is read before it runs; the
				// first stats reply was written after the first count.
				if want := b.sent - sent; r2-r1 != want {
					t.Errorf("bytes_read grew by %d, want %d (the exchange and the second stats request)", r2-r1, want)
				}
				if want := first + replies; w2-w1 != want {
					t.Errorf("bytes_written grew by %d, want %d (the first stats reply, %d, and the exchange's replies, %d)", w2-w1, want, first, replies)
				}
			})
		}
	}
	t.Run("memcached", func(t *testing.T) {
		check(t, func() string { return testenv.StartMemcached(t).Addr })
	})
	forModes(t, func(t *testing.T, mode string) {
		check(t, func() string { return startServer(t, mode).Addr })
	})
}
