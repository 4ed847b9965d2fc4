package loadgen

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"
)

// replyConn returns a Conn whose server side writes reply and then closes.
func replyConn(t *testing.T, reply string) *Conn {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		// Write in two pieces to exercise partial reads.
		half := len(reply) / 2
		b.Write([]byte(reply[:half]))
		b.Write([]byte(reply[half:]))
		b.Close()
	}()
	t.Cleanup(func() { a.Close() })
	return NewConn(a, 5*time.Second)
}

func TestReadGet(t *testing.T) {
	tests := []struct {
		name     string
		reply    string
		hit      bool
		key, val string
		flags    uint32
		replyErr bool // a *ReplyError, connection in sync
		protoErr bool // ErrProtocol
	}{
		{name: "miss", reply: "END\r\n"},
		{name: "hit", reply: "VALUE k1 7 3\r\nabc\r\nEND\r\n", hit: true, key: "k1", val: "abc", flags: 7},
		{name: "hit with cas", reply: "VALUE k1 0 2 99\r\nhi\r\nEND\r\n", hit: true, key: "k1", val: "hi"},
		{name: "binary value", reply: "VALUE k 0 4\r\n\r\n\x00\n\r\nEND\r\n", hit: true, key: "k", val: "\r\n\x00\n"},
		{name: "empty value", reply: "VALUE k 0 0\r\n\r\nEND\r\n", hit: true, key: "k", val: ""},
		{name: "server error", reply: "SERVER_ERROR out of memory\r\n", replyErr: true},
		{name: "client error", reply: "CLIENT_ERROR bad command line format\r\n", replyErr: true},
		{name: "error", reply: "ERROR\r\n", replyErr: true},
		{name: "garbage", reply: "HELLO\r\n", protoErr: true},
		{name: "bad length", reply: "VALUE k 0 x\r\nabc\r\nEND\r\n", protoErr: true},
		{name: "too few fields", reply: "VALUE k 0\r\n", protoErr: true},
		{name: "too many fields", reply: "VALUE k 0 1 2 3\r\n", protoErr: true},
		{name: "length mismatch", reply: "VALUE k 0 2\r\nabc\r\nEND\r\n", protoErr: true},
		{name: "no END", reply: "VALUE k 0 1\r\na\r\nVALUE k 0 1\r\na\r\n", protoErr: true},
		{name: "bare LF", reply: "END\n", protoErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := replyConn(t, tc.reply)
			got, err := c.ReadGet(make([]byte, 0, 1)) // too small: forces growth
			switch {
			case tc.replyErr:
				if !IsReplyError(err) {
					t.Fatalf("reply %q: err = %v, want a ReplyError", tc.reply, err)
				}
				return
			case tc.protoErr:
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("reply %q: err = %v, want ErrProtocol", tc.reply, err)
				}
				return
			case err != nil:
				t.Fatalf("reply %q: unexpected error %v", tc.reply, err)
			}
			if got.Hit != tc.hit || string(got.Key) != tc.key || string(got.Value) != tc.val || got.Flags != tc.flags {
				t.Errorf("reply %q: got hit=%v key=%q val=%q flags=%d, want %v %q %q %d",
					tc.reply, got.Hit, got.Key, got.Value, got.Flags, tc.hit, tc.key, tc.val, tc.flags)
			}
		})
	}
}

func TestReadStore(t *testing.T) {
	tests := []struct {
		reply string
		want  StoreStatus
		isErr bool
	}{
		{"STORED\r\n", Stored, false},
		{"NOT_STORED\r\n", NotStored, false},
		{"EXISTS\r\n", Exists, false},
		{"NOT_FOUND\r\n", NotFound, false},
		{"SERVER_ERROR object too large for cache\r\n", 0, true},
		{"VALUE x 0 1\r\n", 0, true},
	}
	for _, tc := range tests {
		got, err := replyConn(t, tc.reply).ReadStore()
		if (err != nil) != tc.isErr || got != tc.want {
			t.Errorf("reply %q: got %v, %v; want %v, error %v", tc.reply, got, err, tc.want, tc.isErr)
		}
	}
	if s := Stored.String(); s != "STORED" {
		t.Errorf("Stored.String() = %q", s)
	}
}

func TestReadEOF(t *testing.T) {
	_, err := replyConn(t, "VALUE k 0 10\r\nabc").ReadGet(nil)
	if err == nil || IsReplyError(err) {
		t.Errorf("truncated reply: err = %v, want an I/O error", err)
	}
}

func TestReplyErrorText(t *testing.T) {
	err := replyError([]byte("SERVER_ERROR out of memory storing object"))
	want := "loadgen: server replied SERVER_ERROR out of memory storing object"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestClientAgainstFake(t *testing.T) {
	f := startFake(t, false, false)
	c, err := Dial(f.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Version(); err != nil || v != "1.0.0" {
		t.Fatalf("Version = %q, %v", v, err)
	}
	if st, err := c.Set([]byte("a"), []byte("x\r\ny")); err != nil || st != Stored {
		t.Fatalf("Set = %v, %v", st, err)
	}
	rep, err := c.Get([]byte("a"), nil)
	if err != nil || !rep.Hit || string(rep.Value) != "x\r\ny" {
		t.Fatalf("Get = %+v, %v", rep, err)
	}
	if err := c.FlushAll(); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Get([]byte("a"), nil); err != nil || rep.Hit {
		t.Fatalf("Get after flush_all = %+v, %v", rep, err)
	}
	// Pipelined: three requests, one write, replies in order.
	c.AppendSet([]byte("b"), 0, 0, []byte("1"))
	c.AppendGet([]byte("b"))
	c.AppendGet([]byte("zz"))
	if c.Buffered() == 0 {
		t.Fatal("nothing buffered")
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if st, err := c.ReadStore(); st != Stored || err != nil {
		t.Fatalf("pipelined set: %v %v", st, err)
	}
	if rep, err := c.ReadGet(nil); !rep.Hit || string(rep.Key) != "b" || err != nil {
		t.Fatalf("pipelined get b: %+v %v", rep, err)
	}
	if rep, err := c.ReadGet(nil); rep.Hit || err != nil {
		t.Fatalf("pipelined get zz: %+v %v", rep, err)
	}
}

func BenchmarkReadGet(b *testing.B) {
	one := "VALUE key:12345 0 32\r\n" + string(make([]byte, 32)) + "\r\nEND\r\n"
	var stream []byte
	for range 1024 {
		stream = append(stream, one...)
	}
	r := &loopReader{data: stream}
	c := &Conn{r: bufio.NewReaderSize(r, readBufSize)}
	dst := make([]byte, 0, 128)
	b.ReportAllocs()
	b.SetBytes(int64(len(one)))
	for b.Loop() {
		if _, err := c.ReadGet(dst); err != nil {
			b.Fatal(err)
		}
	}
}

// loopReader replays data forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}
