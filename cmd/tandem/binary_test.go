package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/couchbase/gomemcached"
	mc "github.com/couchbase/gomemcached/client"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol"
)

// binRequest builds one binary-protocol request.
func binRequest(op uint8, key, extras, value string, opaque uint32, cas uint64) string {
	return string(protocol.AppendBinRequest(nil, op, opaque, cas, []byte(extras), []byte(key), []byte(value)))
}

func be32s(v uint32) string { return string(binary.BigEndian.AppendUint32(nil, v)) }
func be64s(v uint64) string { return string(binary.BigEndian.AppendUint64(nil, v)) }

// binSentinelOpaque marks the noop sent after a binary case.
const binSentinelOpaque = 0x5e47141e

// binExchange sends req followed by a noop on a fresh connection and reads
// responses until the noop's reply or a close (see exchange). It returns
// the responses rendered one per line (CAS ids shown only as present), and
// whether the server closed the connection.
func binExchange(addr, req string) (string, bool, error) {
	noop := binRequest(protocol.OpNoop, "", "", "", binSentinelOpaque, 0)
	got, state, err := exchangeUntil(addr, req+noop, func(b []byte) bool { _, done := renderBin(b); return done })
	lines, _ := renderBin(got)
	return lines, state == closedConn, err
}

// renderBin renders complete responses in b and reports whether the
// sentinel noop's reply was among them.
func renderBin(b []byte) (string, bool) {
	var s strings.Builder
	for len(b) >= protocol.BinHeaderLen {
		bl := int(binary.BigEndian.Uint32(b[8:]))
		if len(b) < 24+bl {
			break
		}
		el, kl := int(b[4]), int(binary.BigEndian.Uint16(b[2:]))
		opaque := binary.BigEndian.Uint32(b[12:])
		if b[1] == protocol.OpNoop && opaque == binSentinelOpaque {
			return s.String(), true
		}
		body := b[24 : 24+bl]
		fmt.Fprintf(&s, "magic=%#x op=%#x status=%#x opaque=%d cas=%v extras=%q key=%q value=%q\n", b[0], b[1],
			binary.BigEndian.Uint16(b[6:]), opaque, binary.BigEndian.Uint64(b[16:]) != 0, body[:el], body[el:el+kl], body[el+kl:])
		b = b[24+bl:]
	}
	if len(b) > 0 {
		fmt.Fprintf(&s, "partial %q\n", b)
	}
	return s.String(), false
}

// binDiffCases are binary exchanges whose responses must match memcached
// 1.6.18 (CAS ids differ between servers and are compared as present or
// not). They run in order on one server pair; each uses its own keys.
func binDiffCases() []struct{ name, req string } {
	set := func(op uint8, key, value string, flags, exp uint32, opaque uint32, cas uint64) string {
		return binRequest(op, key, be32s(flags)+be32s(exp), value, opaque, cas)
	}
	incr := func(op uint8, key string, delta, initial uint64, exp uint32, opaque uint32, cas uint64) string {
		return binRequest(op, key, be64s(delta)+be64s(initial)+be32s(exp), "", opaque, cas)
	}
	get := func(op uint8, key string, opaque uint32) string { return binRequest(op, key, "", "", opaque, 0) }
	touch := func(op uint8, key string, exp uint32, opaque uint32) string {
		return binRequest(op, key, be32s(exp), "", opaque, 0)
	}
	return []struct{ name, req string }{
		{"version", binRequest(protocol.OpVersion, "", "", "", 7, 0)},
		{"set get getk", set(protocol.OpSet, "b1", "hello", 5, 0, 1, 0) + get(protocol.OpGet, "b1", 2) + get(protocol.OpGetK, "b1", 3) +
			get(protocol.OpGetQ, "b1", 4) + get(protocol.OpGetKQ, "b1", 5)},
		{"misses", get(protocol.OpGet, "b2", 1) + get(protocol.OpGetK, "b2", 2) + get(protocol.OpGetQ, "b2", 3) + get(protocol.OpGetKQ, "b2", 4)},
		{"quiet stores", set(protocol.OpSetQ, "b3", "v1", 1, 0, 1, 0) + set(protocol.OpAddQ, "b3", "v2", 0, 0, 2, 0) +
			set(protocol.OpReplaceQ, "b3x", "v", 0, 0, 3, 0) + set(protocol.OpReplaceQ, "b3", "v3", 0, 0, 4, 0) + get(protocol.OpGet, "b3", 5)},
		{"add replace", set(protocol.OpAdd, "b4", "a", 0, 0, 1, 0) + set(protocol.OpAdd, "b4", "a", 0, 0, 2, 0) +
			set(protocol.OpReplace, "b4x", "a", 0, 0, 3, 0) + set(protocol.OpReplace, "b4", "b", 0, 0, 4, 0)},
		{"cas on missing keys", set(protocol.OpSet, "b5", "a", 0, 0, 1, 12345) + set(protocol.OpReplace, "b5", "a", 0, 0, 2, 12345) +
			set(protocol.OpAdd, "b5", "a", 0, 0, 3, 12345)},
		{"cas mismatch", set(protocol.OpSet, "b6", "a", 0, 0, 1, 0) + set(protocol.OpSet, "b6", "b", 0, 0, 2, 1) + get(protocol.OpGet, "b6", 3)},
		{"delete", set(protocol.OpSet, "b7", "a", 0, 0, 1, 0) + binRequest(protocol.OpDelete, "b7", "", "", 2, 1) +
			binRequest(protocol.OpDelete, "b7", "", "", 3, 0) + binRequest(protocol.OpDelete, "b7", "", "", 4, 0) +
			binRequest(protocol.OpDeleteQ, "b7", "", "", 5, 0) + set(protocol.OpSetQ, "b7", "a", 0, 0, 6, 0) + binRequest(protocol.OpDeleteQ, "b7", "", "", 7, 0)},
		{"incr decr", incr(protocol.OpIncrement, "b8", 5, 10, 0, 1, 0) + incr(protocol.OpIncrement, "b8", 5, 10, 0, 2, 0) +
			incr(protocol.OpDecrement, "b8", 100, 10, 0, 3, 0) + incr(protocol.OpIncrement, "b8x", 5, 10, 0xffffffff, 4, 0) +
			incr(protocol.OpIncrementQ, "b8", 1, 0, 0, 5, 0) + incr(protocol.OpDecrementQ, "b8x", 1, 0, 0xffffffff, 6, 0) +
			incr(protocol.OpIncrement, "b8", 1, 0, 0, 7, 1) + get(protocol.OpGet, "b8", 8)},
		{"incr wraps and shrinks", set(protocol.OpSet, "b9", "18446744073709551615", 0, 0, 1, 0) + incr(protocol.OpIncrement, "b9", 2, 0, 0, 2, 0) +
			get(protocol.OpGet, "b9", 3) + set(protocol.OpSet, "b9b", "100", 0, 0, 4, 0) + incr(protocol.OpDecrement, "b9b", 1, 0, 0, 5, 0) + get(protocol.OpGet, "b9b", 6)},
		{"incr non-numeric", set(protocol.OpSet, "b10", "abc", 0, 0, 1, 0) + incr(protocol.OpIncrement, "b10", 1, 0, 0, 2, 0)},
		{"append prepend", set(protocol.OpSet, "b11", "b", 3, 0, 1, 0) + binRequest(protocol.OpAppend, "b11", "", "c", 2, 0) +
			binRequest(protocol.OpPrepend, "b11", "", "a", 3, 0) + binRequest(protocol.OpAppend, "b11x", "", "c", 4, 0) +
			binRequest(protocol.OpAppendQ, "b11", "", "d", 5, 0) + binRequest(protocol.OpPrependQ, "b11x", "", "d", 6, 0) +
			binRequest(protocol.OpAppend, "b11", "", "c", 7, 1) + get(protocol.OpGet, "b11", 8)},
		{"touch gat", set(protocol.OpSet, "b12", "val", 9, 0, 1, 0) + touch(protocol.OpTouch, "b12", 100, 2) + touch(protocol.OpTouch, "b12x", 100, 3) +
			touch(protocol.OpGAT, "b12", 100, 4) + touch(protocol.OpGATQ, "b12x", 100, 5) + touch(protocol.OpGATK, "b12", 100, 6) +
			touch(protocol.OpGATKQ, "b12x", 100, 7) + touch(protocol.OpGAT, "b12x", 100, 8) + touch(protocol.OpGATK, "b12x", 100, 9)},
		{"expired on set", set(protocol.OpSet, "b13", "v", 0, 0xffffffff, 1, 0) + get(protocol.OpGet, "b13", 2)},
		{"sasl without auth", binRequest(protocol.OpSASLList, "", "", "", 1, 0) + binRequest(protocol.OpSASLAuth, "PLAIN", "", "\x00u\x00p", 2, 0) +
			binRequest(protocol.OpSASLStep, "PLAIN", "", "\x00u\x00p", 3, 0)},
		{"unknown opcode without body", binRequest(0x40, "", "", "", 1, 0) + binRequest(0xff, "", "", "", 2, 0)},
		{"stat groups", binRequest(protocol.OpStat, "bogus", "", "", 1, 0) + binRequest(protocol.OpStat, "detail", "", "", 2, 0)},
		{"too large set unlinks", set(protocol.OpSet, "b14", "x", 0, 0, 1, 0) + set(protocol.OpSet, "b14", strings.Repeat("z", 2000000), 0, 0, 2, 0) +
			get(protocol.OpGet, "b14", 3)},
		{"too large append is swallowed", set(protocol.OpSet, "b15", "x", 0, 0, 1, 0) + binRequest(protocol.OpAppend, "b15", "", strings.Repeat("z", 1048570), 2, 0) +
			get(protocol.OpGet, "b15", 3)},
		{"data type and vbucket are ignored", func() string {
			r := []byte(get(protocol.OpGet, "b1", 1))
			r[5], r[7] = 9, 3
			return string(r)
		}()},
		{"keylen 251 closes", get(protocol.OpGet, strings.Repeat("k", 251), 1)},
		{"extras on get close", binRequest(protocol.OpGet, "b16", "abcd", "", 1, 0)},
		{"key longer than body closes", func() string {
			r := []byte(get(protocol.OpGet, "b16", 1))
			binary.BigEndian.PutUint32(r[8:], 1)
			return string(r)
		}()},
		{"noop with body closes", binRequest(protocol.OpNoop, "", "", "x", 1, 0)},
		{"set without key closes", set(protocol.OpSet, "", "x", 0, 0, 1, 0)},
		{"quitq", binRequest(protocol.OpQuitQ, "", "", "", 1, 0)},
		{"quit", binRequest(protocol.OpQuit, "", "", "", 1, 0)},
		{"flush", set(protocol.OpSet, "b17", "v", 0, 0, 1, 0) + binRequest(protocol.OpFlushQ, "", "", "", 2, 0) +
			binRequest(protocol.OpFlush, "", be32s(0), "", 3, 0) + get(protocol.OpGet, "b17", 4)},
	}
}

// TestBinaryDifferential compares tandem's binary protocol (every mode) with
// the real memcached.
func TestBinaryDifferential(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		mcd := testenv.StartMemcached(t)
		s := startServer(t, mode, "-m", "256")
		for _, tc := range binDiffCases() {
			want, wantClosed, err := binExchange(mcd.Addr, tc.req)
			if err != nil {
				t.Fatalf("%s: memcached: %v", tc.name, err)
			}
			got, gotClosed, err := binExchange(s.Addr, tc.req)
			if err != nil {
				t.Fatalf("%s: tandem: %v", tc.name, err)
			}
			if got != want || gotClosed != wantClosed {
				t.Errorf("%s:\n tandem (closed=%v)\n%s memcached (closed=%v)\n%s", tc.name, gotClosed, got, wantClosed, want)
			}
		}
	})
}

// TestMemcapableBinary runs libmemcached's conformance checker in binary
// mode against every mode.
func TestMemcapableBinary(t *testing.T) {
	tool := testenv.NeedTool(t, "memccapable", "libmemcached-tools")
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		host, port, _ := net.SplitHostPort(s.Addr)
		out, err := exec.Command(tool, "-h", host, "-p", port, "-b", "-t", "10").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "All tests passed") {
			t.Fatalf("memccapable -b failed (%v):\n%s", err, out)
		}
	})
}

// writeAuthFile writes a credentials file for --auth-file.
func writeAuthFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(path, []byte("alice:wonder land\nbob:builder\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBinaryClientLibrary drives the binary protocol with a real client
// library (couchbase/gomemcached), with and without SASL authentication.
func TestBinaryClientLibrary(t *testing.T) {
	auth := writeAuthFile(t)
	forModes(t, func(t *testing.T, mode string) {
		for _, withAuth := range []bool{false, true} {
			var s *server
			if withAuth {
				s = startServer(t, mode, "--auth-file", auth)
			} else {
				s = startServer(t, mode)
			}
			c, err := mc.Connect("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			if withAuth {
				if _, err := c.Get(0, "x"); err == nil {
					t.Fatal("get before authenticating must fail")
				}
				c.Close()
				if c, err = mc.Connect("tcp", s.Addr); err != nil {
					t.Fatal(err)
				}
				if _, err := c.Auth("alice", "wrong"); err == nil {
					t.Fatal("a wrong password must fail")
				}
				c.Close()
				if c, err = mc.Connect("tcp", s.Addr); err != nil {
					t.Fatal(err)
				}
				if res, err := c.Auth("alice", "wonder land"); err != nil {
					t.Fatalf("auth: %v %v", res, err)
				}
			}
			driveClient(t, c)
			c.Close()
		}
	})
}

func driveClient(t *testing.T, c *mc.Client) {
	t.Helper()
	if _, err := c.Set(0, "lib:a", 7, 0, []byte("hello")); err != nil {
		t.Fatalf("set: %v", err)
	}
	res, err := c.Get(0, "lib:a")
	if err != nil || string(res.Body) != "hello" || binary.BigEndian.Uint32(res.Extras) != 7 || res.Cas == 0 {
		t.Fatalf("get: %v %v", res, err)
	}
	if _, err := c.Append(0, "lib:a", []byte(" world")); err != nil {
		t.Fatalf("append: %v", err)
	}
	if res, err = c.Get(0, "lib:a"); err != nil || string(res.Body) != "hello world" {
		t.Fatalf("get after append: %v %v", res, err)
	}
	if _, err := c.Add(0, "lib:a", 0, 0, []byte("x")); err == nil {
		t.Fatal("add on an existing key must fail")
	}
	n, err := c.Incr(0, "lib:n", 5, 10, 0)
	if err != nil || n != 10 {
		t.Fatalf("incr creating: %d %v", n, err)
	}
	if n, err = c.Incr(0, "lib:n", 5, 10, 0); err != nil || n != 15 {
		t.Fatalf("incr: %d %v", n, err)
	}
	if n, err = c.Decr(0, "lib:n", 20, 0, 0); err != nil || n != 0 {
		t.Fatalf("decr: %d %v", n, err)
	}
	keys := []string{"lib:a", "lib:n", "lib:missing"}
	got := map[string]*gomemcached.MCResponse{}
	err = c.GetBulk(0, keys, got, nil)
	if err != nil || len(got) != 2 || string(got["lib:a"].Body) != "hello world" || strings.TrimSpace(string(got["lib:n"].Body)) != "0" {
		t.Fatalf("getbulk: %v %v", got, err)
	}
	if _, err := c.Del(0, "lib:a"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.Get(0, "lib:a"); err == nil {
		t.Fatal("get after delete must miss")
	}
	stats, err := c.StatsMap("")
	if err != nil || stats["version"] != "1.6.18" {
		t.Fatalf("stats: %v %v", stats["version"], err)
	}
}

// TestAuthFile checks both authentication paths end to end.
func TestAuthFile(t *testing.T) {
	auth := writeAuthFile(t)
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "--auth-file", auth)
		c := dial(t, s.Addr)
		want := "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR authentication failure\r\nSTORED\r\nEND\r\n"
		if got := roundTrip(t, c, "get a\r\nset x 0 0 7\r\nbob bad\r\nset x 0 0 11\r\nbob builder\r\nget a\r\n", len(want)); got != want {
			t.Fatalf("text auth: got %s want %s", quote(got), quote(want))
		}
		got, closed, err := binExchange(s.Addr, binRequest(protocol.OpGet, "a", "", "", 1, 0))
		if err != nil || !closed || !strings.Contains(got, "status=0x20") || !strings.Contains(got, `"Auth failure."`) {
			t.Fatalf("binary without auth: %s closed=%v %v", got, closed, err)
		}
	})
}

// TestBindingProtocol checks -B ascii and -B binary.
func TestBindingProtocol(t *testing.T) {
	s := startServer(t, "inline", "-B", "ascii")
	c := dial(t, s.Addr)
	if got := roundTrip(t, c, "\x80\x00\r\n", len("ERROR\r\n")); got != "ERROR\r\n" {
		t.Fatalf("-B ascii: %q", got)
	}
	s = startServer(t, "inline", "-B", "binary")
	c = dial(t, s.Addr)
	if _, err := io.WriteString(c, "get a b c d e f g h i j k l m\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
	if n, err := c.Read(make([]byte, 16)); err == nil || n != 0 {
		t.Fatalf("-B binary must close a text connection: %d %v", n, err)
	}
}
