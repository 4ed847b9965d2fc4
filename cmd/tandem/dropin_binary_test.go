package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/protocol"
)

// TestBinaryT ports the checks of memcached 1.6.18's t/binary.t to Go: a
// small binary-protocol client runs the same sequence of operations against
// tandem in every mode and against memcached, and every step must give the
// result binary.t expects.
func TestBinaryT(t *testing.T) {
	forServers(t, nil, func(t *testing.T, addr string) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		runBinaryT(t, &binClient{t: t, c: c, r: bufio.NewReader(c)})
	})
}

// binStatus values of binary.t's error checks.
const (
	binNotFound = 0x1
	binExists   = 0x2
	binTooBig   = 0x3
)

// binResp is one response.
type binResp struct {
	op     uint8
	status uint16
	opaque uint32
	cas    uint64
	extras []byte
	key    []byte
	value  []byte
}

// binClient is binary.t's MC::Client.
type binClient struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	opaque uint32
}

func (b *binClient) send(op uint8, key, value string, opaque uint32, extras string, cas uint64) {
	b.t.Helper()
	if _, err := io.WriteString(b.c, binRequest(op, key, extras, value, opaque, cas)); err != nil {
		b.t.Fatal(err)
	}
}

func (b *binClient) recv() binResp {
	b.t.Helper()
	var h [protocol.BinHeaderLen]byte
	if _, err := io.ReadFull(b.r, h[:]); err != nil {
		b.t.Fatalf("reading a response: %v", err)
	}
	if h[0] != protocol.BinResMagic {
		b.t.Fatalf("response magic %#x", h[0])
	}
	body := make([]byte, binary.BigEndian.Uint32(h[8:]))
	if _, err := io.ReadFull(b.r, body); err != nil {
		b.t.Fatalf("reading a response body: %v", err)
	}
	el, kl := int(h[4]), int(binary.BigEndian.Uint16(h[2:]))
	return binResp{op: h[1], status: binary.BigEndian.Uint16(h[6:]), opaque: binary.BigEndian.Uint32(h[12:]),
		cas: binary.BigEndian.Uint64(h[16:]), extras: body[:el], key: body[el : el+kl], value: body[el+kl:]}
}

// do sends one request and returns its response, checking the opaque.
func (b *binClient) do(op uint8, key, value, extras string, cas uint64) binResp {
	b.t.Helper()
	b.opaque++
	b.send(op, key, value, b.opaque, extras, cas)
	r := b.recv()
	if r.opaque != b.opaque {
		b.t.Fatalf("op %#x: opaque %d, want %d", op, r.opaque, b.opaque)
	}
	return r
}

// mustOK fails unless r succeeded.
func (b *binClient) mustOK(what string, r binResp) binResp {
	b.t.Helper()
	if r.status != 0 {
		b.t.Fatalf("%s: status %#x (%q)", what, r.status, r.value)
	}
	return r
}

func (b *binClient) get(key string) binResp { return b.do(protocol.OpGet, key, "", "", 0) }

func (b *binClient) set(key, value string, flags, exp uint32, cas uint64) binResp {
	return b.do(protocol.OpSet, key, value, be32s(flags)+be32s(exp), cas)
}

// check is binary.t's $check: key holds value with flags.
func (b *binClient) check(key string, flags uint32, value string) {
	b.t.Helper()
	r := b.mustOK("get "+key, b.get(key))
	if got := binary.BigEndian.Uint32(r.extras); got != flags || string(r.value) != value {
		b.t.Fatalf("get %s: flags %d value %q, want %d %q", key, got, r.value, flags, value)
	}
}

// empty is binary.t's $empty: key is not found.
func (b *binClient) empty(key string) {
	b.t.Helper()
	if r := b.get(key); r.status != binNotFound {
		b.t.Fatalf("get %s: status %#x, want not found", key, r.status)
	}
}

// silent sends a quiet request and a noop: only the noop may answer.
func (b *binClient) silent(op uint8, key, value, extras string, cas uint64) {
	b.t.Helper()
	b.send(op, key, value, 7278552, extras, cas)
	b.send(protocol.OpNoop, "", "", 7278553, "", 0)
	if r := b.recv(); r.opaque != 7278553 {
		b.t.Fatalf("quiet op %#x answered (status %#x)", op, r.status)
	}
}

// incr runs an increment or decrement and returns the new value.
func (b *binClient) incr(op uint8, key string, amount, initial uint64, exp uint32) uint64 {
	b.t.Helper()
	r := b.mustOK(fmt.Sprintf("op %#x %s", op, key), b.do(op, key, "", be64s(amount)+be64s(initial)+be32s(exp), 0))
	return binary.BigEndian.Uint64(r.value)
}

func runBinaryT(t *testing.T, b *binClient) {
	// Version, flush, noop.
	if v := b.mustOK("version", b.do(protocol.OpVersion, "", "", "", 0)); len(v.value) == 0 {
		t.Fatal("empty version")
	}
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	b.mustOK("noop", b.do(protocol.OpNoop, "", "", "", 0))

	// Simple set/get, delete.
	b.mustOK("set", b.set("x", "somevalue", 19, 5, 0))
	b.check("x", 19, "somevalue")
	b.mustOK("delete", b.do(protocol.OpDelete, "x", "", "", 0))
	b.empty("x")

	// Flush.
	b.mustOK("set", b.set("x", "somevaluex", 19, 5, 0))
	b.mustOK("set", b.set("y", "somevaluey", 17, 5, 0))
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	b.empty("x")
	b.empty("y")

	// Add.
	b.empty("i")
	b.mustOK("add", b.do(protocol.OpAdd, "i", "ex", be32s(5)+be32s(10), 0))
	b.check("i", 5, "ex")
	if r := b.do(protocol.OpAdd, "i", "ex2", be32s(10)+be32s(5), 0); r.status != binExists {
		t.Fatalf("second add: status %#x, want exists", r.status)
	}
	b.check("i", 5, "ex")

	// Too big: refused, and the old value is gone.
	b.empty("toobig")
	b.mustOK("set", b.set("toobig", "not too big", 10, 10, 0))
	if r := b.set("toobig", strings.Repeat("x", 1024*1024)+"x", 10, 10, 0); r.status != binTooBig {
		t.Fatalf("too big set: status %#x", r.status)
	}
	b.empty("toobig")

	// Replace.
	b.empty("j")
	if r := b.do(protocol.OpReplace, "j", "ex", be32s(19)+be32s(5), 0); r.status != binNotFound {
		t.Fatalf("replace of a missing key: status %#x", r.status)
	}
	b.empty("j")
	b.mustOK("add", b.do(protocol.OpAdd, "j", "ex2", be32s(14)+be32s(5), 0))
	b.check("j", 14, "ex2")
	b.mustOK("replace", b.do(protocol.OpReplace, "j", "ex3", be32s(24)+be32s(5), 0))
	b.check("j", 24, "ex3")

	// Multiget: quiet gets and a noop.
	b.mustOK("add", b.do(protocol.OpAdd, "xx", "ex", be32s(1)+be32s(5), 0))
	b.mustOK("add", b.do(protocol.OpAdd, "wye", "why", be32s(2)+be32s(5), 0))
	keys := []string{"xx", "wye", "zed"}
	for i, k := range keys {
		b.send(protocol.OpGetQ, k, "", uint32(i), "", 0)
	}
	b.send(protocol.OpNoop, "", "", uint32(len(keys)+10), "", 0)
	got := map[string]string{}
	for {
		r := b.recv()
		if r.opaque == uint32(len(keys)+10) {
			break
		}
		got[keys[r.opaque]] = fmt.Sprintf("%d %s", binary.BigEndian.Uint32(r.extras), r.value)
	}
	if len(got) != 2 || got["xx"] != "1 ex" || got["wye"] != "2 why" {
		t.Fatalf("multiget: %v", got)
	}

	// Increment and decrement.
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	for _, step := range []struct {
		op            uint8
		amount, init  uint64
		want          uint64
		whatForReport string
	}{
		{protocol.OpIncrement, 1, 0, 0, "first incr is zero"},
		{protocol.OpIncrement, 1, 0, 1, "second incr is one"},
		{protocol.OpIncrement, 211, 0, 212, "adding 211"},
		{protocol.OpIncrement, 1 << 33, 0, 8589934804, "past 32 bits"},
	} {
		if v := b.incr(step.op, "x", step.amount, step.init, 0); v != step.want {
			t.Fatalf("%s: %d, want %d", step.whatForReport, v, step.want)
		}
	}
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	if v := b.incr(protocol.OpIncrement, "x", 1, 5, 0); v != 5 {
		t.Fatalf("initial value: %d", v)
	}
	if v := b.incr(protocol.OpDecrement, "x", 1, 0, 0); v != 4 {
		t.Fatalf("decrease by one: %d", v)
	}
	if v := b.incr(protocol.OpDecrement, "x", 211, 0, 0); v != 0 {
		t.Fatalf("floor is zero: %d", v)
	}

	// CAS.
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	if r := b.set("x", "bad value", 19, 5, 0x7FFFFFFFFF); r.status != binNotFound {
		t.Fatalf("cas set of a missing key: status %#x", r.status)
	}
	b.mustOK("add", b.do(protocol.OpAdd, "x", "original value", be32s(5)+be32s(19), 0))
	orig := b.mustOK("get", b.get("x"))
	if string(orig.value) != "original value" {
		t.Fatalf("get: %q", orig.value)
	}
	if r := b.set("x", "broken value", 19, 5, orig.cas+1); r.status != binExists {
		t.Fatalf("cas set with a wrong cas: status %#x", r.status)
	}
	b.mustOK("cas set", b.set("x", "new value", 19, 5, orig.cas))
	if r := b.mustOK("get", b.get("x")); string(r.value) != "new value" {
		t.Fatalf("after cas set: %q", r.value)
	}
	if r := b.set("x", "replay value", 19, 5, orig.cas); r.status != binExists {
		t.Fatalf("cas set replayed: status %#x", r.status)
	}

	// Silent mutations.
	for _, m := range []struct {
		op  uint8
		key string
	}{{protocol.OpSetQ, "silentset"}, {protocol.OpAddQ, "silentadd"}} {
		b.empty(m.key)
		b.silent(m.op, m.key, m.key+"val", be32s(82)+be32s(0), 0)
		b.check(m.key, 82, m.key+"val")
	}
	// A quiet command still reports an error: the replace of a missing key
	// answers not found before the noop (the binary.t we port predates
	// that; memcached 1.6.18 does it, and so does tandem).
	b.empty("silentreplace")
	b.send(protocol.OpReplaceQ, "silentreplace", "somevalue", 7278552, be32s(829)+be32s(0), 0)
	b.send(protocol.OpNoop, "", "", 7278553, "", 0)
	if r := b.recv(); r.opaque != 7278552 || r.status != binNotFound {
		t.Fatalf("quiet replace of a missing key: opaque %d status %#x, want its not found", r.opaque, r.status)
	}
	if r := b.recv(); r.opaque != 7278553 {
		t.Fatalf("noop after a quiet replace: opaque %d", r.opaque)
	}
	b.empty("silentreplace")
	b.mustOK("add", b.do(protocol.OpAdd, "silentreplace", "xval", be32s(831)+be32s(0), 0))
	b.check("silentreplace", 831, "xval")
	b.silent(protocol.OpReplaceQ, "silentreplace", "somevalue", be32s(829)+be32s(0), 0)
	b.check("silentreplace", 829, "somevalue")

	b.empty("silentdelete")
	b.mustOK("set", b.set("silentdelete", "some val", 19, 0, 0))
	b.silent(protocol.OpDeleteQ, "silentdelete", "", "", 0)
	b.empty("silentdelete")

	// Silent increments and decrements, each read back with an increment
	// by 0.
	b.empty("silentincr")
	b.empty("silentdecr")
	for _, step := range []struct {
		op           uint8
		key          string
		amount, init uint64
		want         uint64
	}{
		{protocol.OpIncrementQ, "silentincr", 0, 0, 0},
		{protocol.OpIncrementQ, "silentincr", 8, 0, 8},
		{protocol.OpDecrementQ, "silentdecr", 0, 185, 185},
		{protocol.OpDecrementQ, "silentdecr", 8, 0, 177},
	} {
		b.silent(step.op, step.key, "", be64s(step.amount)+be64s(step.init)+be32s(0), 0)
		if v := b.incr(protocol.OpIncrement, step.key, 0, 0, 0); v != step.want {
			t.Fatalf("quiet op %#x on %s by %d: %d, want %d", step.op, step.key, step.amount, v, step.want)
		}
	}

	// Silent flush.
	b.mustOK("set", b.set("x", "somevaluex", 19, 5, 0))
	b.mustOK("set", b.set("y", "somevaluey", 17, 5, 0))
	b.silent(protocol.OpFlushQ, "", "", "", 0)
	b.empty("x")
	b.empty("y")

	// Append and prepend, loud and silent.
	for _, a := range []struct {
		op          uint8
		quiet       bool
		key, suffix string
		prepend     bool
	}{
		{protocol.OpAppend, false, "appendkey", " more", false},
		{protocol.OpPrepend, false, "prependkey", "prefixed ", true},
		{protocol.OpAppendQ, true, "appendqkey", " more", false},
		{protocol.OpPrependQ, true, "prependqkey", "prefixed ", true},
	} {
		b.mustOK("set", b.set(a.key, "some value", 19, 8, 0))
		if a.quiet {
			b.silent(a.op, a.key, a.suffix, "", 0)
		} else {
			b.mustOK("append/prepend", b.do(a.op, a.key, a.suffix, "", 0))
		}
		want := "some value" + a.suffix
		if a.prepend {
			want = a.suffix + "some value"
		}
		b.check(a.key, 19, want)
	}
}
