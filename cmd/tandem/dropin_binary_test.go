package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol"
)

// TestBinaryT ports the checks of memcached 1.6.18's t/binary.t to Go: a
// small binary-protocol client runs the same sequence of operations against
// tandem in every mode and against memcached, and every step must give the
// result binary.t expects. memcached 1.6's test library starts the server
// on a unix socket, and binary.t checks stats settings' domain_socket names
// it; the same run over TCP checks NULL there.
func TestBinaryT(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		forServers(t, nil, func(t *testing.T, addr string) {
			runBinaryT(t, newBinClient(t, "tcp", addr), "NULL")
		})
	})
	t.Run("unix", func(t *testing.T) {
		forModes(t, func(t *testing.T, mode string) {
			sock := filepath.Join(t.TempDir(), "tandem.sock")
			startServerArgs(t, binPath, "-s", sock, "--mode", mode, "--log-format", "json")
			runBinaryT(t, newBinClient(t, "unix", sock), sock)
		})
		t.Run("memcached", func(t *testing.T) {
			t.Parallel()
			path := testenv.NeedTool(t, "memcached", "memcached")
			sock := filepath.Join(t.TempDir(), "mc.sock")
			args := []string{"-s", sock, "-U", "0"}
			if os.Getuid() == 0 {
				args = append(args, "-u", "root")
			}
			startRaw(t, path, args, sock)
			runBinaryT(t, newBinClient(t, "unix", sock), sock)
		})
	})
}

// binStatus values of binary.t's error checks.
const (
	binNotFound    = 0x1
	binExists      = 0x2
	binTooBig      = 0x3
	binInvalid     = 0x4
	binDeltaBadval = 0x6
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
	t       *testing.T
	network string
	addr    string
	c       net.Conn
	r       *bufio.Reader
	opaque  uint32
}

// newBinClient connects to addr; the connection closes when the test ends.
func newBinClient(t *testing.T, network, addr string) *binClient {
	b := &binClient{t: t, network: network, addr: addr}
	b.c = b.dial()
	b.r = bufio.NewReader(b.c)
	return b
}

// dial opens another connection to the server, with a hang guard.
func (b *binClient) dial() net.Conn {
	b.t.Helper()
	c, err := net.DialTimeout(b.network, b.addr, 5*time.Second)
	if err != nil {
		b.t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	b.t.Cleanup(func() { c.Close() })
	return c
}

// stats is binary.t's stats: a stat request's key/value responses until
// the empty one.
func (b *binClient) stats(group string) map[string]string {
	b.t.Helper()
	b.opaque++
	b.send(protocol.OpStat, group, "", b.opaque, "", 0)
	st := map[string]string{}
	for {
		r := b.mustOK("stats "+group, b.recv())
		if r.opaque != b.opaque {
			b.t.Fatalf("stats %s: opaque %d, want %d", group, r.opaque, b.opaque)
		}
		if len(r.key) == 0 {
			return st
		}
		st[string(r.key)] = string(r.value)
	}
}

// ttl reads a key's remaining TTL with a meta get on a text connection
// ("-1": none), where binary.t sleeps to watch a touched item live on.
func (b *binClient) ttl(key string) string {
	b.t.Helper()
	c := b.dial()
	defer c.Close()
	if _, err := io.WriteString(c, "mg "+key+" t\r\n"); err != nil {
		b.t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		b.t.Fatalf("mg %s t: %v", key, err)
	}
	ttl, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r\n"), "HD t")
	if !ok {
		b.t.Fatalf("mg %s t: %q", key, line)
	}
	return ttl
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
		b.t.Fatalf("reading a response body: %v (op %#x len %d opaque %d)", err, h[1], len(body), binary.BigEndian.Uint32(h[12:]))
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

func runBinaryT(t *testing.T, b *binClient, domainSocket string) {
	// Per-prefix stats on for all of it (their dump is read at the end).
	b.stats("detail on")

	// Version, flush, noop.
	if v := b.mustOK("version", b.do(protocol.OpVersion, "", "", "", 0)); len(v.value) == 0 {
		t.Fatal("empty version")
	}
	// Bug 71: a binary flush counts in cmd_flush.
	before := b.stats("")["cmd_flush"]
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	if after := b.stats("")["cmd_flush"]; after != plusOne(t, before) {
		t.Fatalf("cmd_flush %s after a binary flush, was %s", after, before)
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
	// Issue 48: incr and decr of text fail and leave it alone.
	b.mustOK("set", b.set("issue48", "text", 0, 0, 0))
	for _, op := range []uint8{protocol.OpIncrement, protocol.OpDecrement} {
		if r := b.do(op, "issue48", "", be64s(1)+be64s(0)+be32s(0), 0); r.status != binDeltaBadval {
			t.Fatalf("op %#x of text: status %#x, want delta badval", op, r.status)
		}
		b.check("issue48", 0, "text")
	}
	// Issue 320: the initial value is stored with its own length.
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	if v := b.incr(protocol.OpIncrement, "issue320", 1, 1, 0); v != 1 {
		t.Fatalf("incr with initial value 1: %d", v)
	}
	b.check("issue320", 0, "1")

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

	// bug220: incr gives the item a new CAS, the one get then reports.
	setCAS := b.mustOK("set", b.set("bug220", "100", 0, 0, 0)).cas
	for _, want := range []uint64{1099, 2098} {
		r := b.mustOK("incr", b.do(protocol.OpIncrement, "bug220", "", be64s(999)+be64s(0)+be32s(0), 0))
		if v := binary.BigEndian.Uint64(r.value); v != want || r.cas == setCAS {
			t.Fatalf("incr bug220 by 999: %d cas %d, want %d and a new cas (set's was %d)", v, r.cas, want, setCAS)
		}
		if g := b.mustOK("get", b.get("bug220")); g.cas != r.cas {
			t.Fatalf("get bug220: cas %d, incr's was %d", g.cas, r.cas)
		}
	}
	// bug21: past 2^63.
	b.mustOK("add", b.do(protocol.OpAdd, "bug21", "9223372036854775807", be32s(0)+be32s(0), 0))
	for _, step := range []struct {
		op   uint8
		want uint64
	}{{protocol.OpIncrement, 9223372036854775808}, {protocol.OpIncrement, 9223372036854775809}, {protocol.OpDecrement, 9223372036854775808}} {
		if v := b.incr(step.op, "bug21", 1, 0, 0); v != step.want {
			t.Fatalf("op %#x on bug21: %d, want %d", step.op, v, step.want)
		}
	}

	// CAS.
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	if r := b.set("x", "bad value", 19, 5, 0x7FFFFFFFFF); r.status != binNotFound {
		t.Fatalf("cas set of a missing key: status %#x", r.status)
	}
	added := b.mustOK("add", b.do(protocol.OpAdd, "x", "original value", be32s(5)+be32s(19), 0))
	orig := b.mustOK("get", b.get("x"))
	if string(orig.value) != "original value" || orig.cas != added.cas {
		t.Fatalf("get: %q cas %d, add's cas %d", orig.value, orig.cas, added.cas)
	}
	if r := b.set("x", "broken value", 19, 5, orig.cas+1); r.status != binExists {
		t.Fatalf("cas set with a wrong cas: status %#x", r.status)
	}
	casSet := b.mustOK("cas set", b.set("x", "new value", 19, 5, orig.cas))
	if r := b.mustOK("get", b.get("x")); string(r.value) != "new value" || r.cas != casSet.cas {
		t.Fatalf("after cas set: %q cas %d, the set's cas %d", r.value, r.cas, casSet.cas)
	}
	if r := b.set("x", "replay value", 19, 5, orig.cas); r.status != binExists {
		t.Fatalf("cas set replayed: status %#x", r.status)
	}

	// Touch and GAT. binary.t sleeps to see a touched item outlive its
	// old TTL and die at its new one; here the TTL is read back instead,
	// and an exptime already past stands for one that ran out.
	b.mustOK("flush", b.do(protocol.OpFlush, "", "", "", 0))
	b.mustOK("set", b.set("totouch", "toast", 0, 1, 0))
	b.mustOK("touch", b.do(protocol.OpTouch, "totouch", "", be32s(10), 0))
	if ttl := b.ttl("totouch"); ttl != "10" && ttl != "9" {
		t.Fatalf("TTL after touch 10: %s", ttl)
	}
	b.check("totouch", 0, "toast")
	b.mustOK("set", b.set("totouch", "toast2", 0, 1, 0))
	if r := b.mustOK("gat", b.do(protocol.OpGAT, "totouch", "", be32s(10), 0)); string(r.value) != "toast2" {
		t.Fatalf("gat: %q", r.value)
	}
	if ttl := b.ttl("totouch"); ttl != "10" && ttl != "9" {
		t.Fatalf("TTL after gat 10: %s", ttl)
	}
	b.mustOK("set", b.set("totouch", "toast3", 0, 100, 0))
	b.mustOK("touch", b.do(protocol.OpTouch, "totouch", "", be32s(1_000_000_000), 0)) // 2001: past
	b.empty("totouch")

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

	// Leaky binary get: large values stored over text, read over binary.
	big := "a big value that's > .5M and < 1M. "
	for len(big)*2 < 1<<20 {
		big += big
	}
	tc := b.dial()
	tr := bufio.NewReader(tc)
	for i := 1; i <= 100; i++ {
		key := fmt.Sprintf("some_key_%d", i)
		if _, err := fmt.Fprintf(tc, "set %s 0 0 %d\r\n%s\r\n", key, len(big), big); err != nil {
			t.Fatal(err)
		}
		if line, err := tr.ReadString('\n'); err != nil || line != "STORED\r\n" {
			t.Fatalf("set %s: %q %v", key, line, err)
		}
		if r := b.mustOK("get "+key, b.get(key)); len(r.value) != len(big) {
			t.Fatalf("get %s: %d bytes, want %d", key, len(r.value), len(big))
		}
	}

	// Stats settings.
	st := b.stats("settings")
	for name, want := range map[string]string{"maxconns": "1024", "domain_socket": domainSocket,
		"evictions": "on", "cas_enabled": "yes", "flush_enabled": "yes"} {
		if st[name] != want {
			t.Errorf("stats settings %s = %q, want %q", name, st[name], want)
		}
	}

	// A quiet quit hangs up without a reply.
	qc := b.dial()
	if _, err := io.WriteString(qc, binRequest(protocol.OpQuitQ, "", "", "", 0, 0)); err != nil {
		t.Fatal(err)
	}
	if n, err := qc.Read(make([]byte, 24)); n != 0 || err != io.EOF {
		t.Fatalf("after quitq: read %d bytes, %v; want a hang-up", n, err)
	}

	// Protocol boundary overruns: pairs of quiet sets around 2 KiB, split
	// at every byte around the 2048-byte read buffer.
	for i := 1900; i < 2100; i++ {
		k := fmt.Sprintf("test_key_%d", i)
		v := strings.Repeat("x", i)
		data := binRequest(protocol.OpSetQ, k, be32s(82)+be32s(0), v, 0, 0) +
			binRequest(protocol.OpSetQ, "alt_"+k, be32s(82)+be32s(0), "blah", 0, 0)
		if len(data) > 2024 {
			for j := 2024; j < min(2096, len(data)); j++ {
				writeAll(t, b.c, data[:j])
				writeAll(t, b.c, data[j:])
			}
		} else {
			writeAll(t, b.c, data)
		}
		b.check(k, 82, v)
		b.check("alt_"+k, 82, "blah")
	}

	// The per-prefix stats dump, within bounds.
	b.stats("detail dump")

	// Last, as it may cost the connection: a key over 250 bytes is invalid.
	if r := b.get(strings.Repeat("x", 365)); r.status != binInvalid {
		t.Fatalf("get of a 365-byte key: status %#x, want invalid arguments", r.status)
	}
}

// plusOne is the decimal string n plus one.
func plusOne(t *testing.T, n string) string {
	t.Helper()
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		t.Fatalf("not a counter: %q", n)
	}
	return strconv.FormatUint(v+1, 10)
}
