package protocol

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// binReq builds a binary request; bodyLen and magic, when not 0, override the
// header's body length and magic byte.
type binReq struct {
	op                 uint8
	key, extras, value string
	opaque             uint32
	cas                uint64
	bodyLen            int
	magic              byte
}

func (b binReq) bytes() []byte {
	out := AppendBinRequest(nil, b.op, b.opaque, b.cas, []byte(b.extras), []byte(b.key), []byte(b.value))
	if b.magic != 0 {
		out[0] = b.magic
	}
	if b.bodyLen != 0 {
		binary.BigEndian.PutUint32(out[8:], uint32(b.bodyLen))
	}
	return out
}

func be32(v uint32) string { return string(binary.BigEndian.AppendUint32(nil, v)) }

func setExtras(flags, exp uint32) string { return be32(flags) + be32(exp) }

func incrExtras(delta, initial uint64, exp uint32) string {
	return string(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, delta), initial)) + be32(exp)
}

// describeBin renders a binary request's parse result.
func describeBin(r *Request) string {
	if r.Cmd != CmdBinary {
		return describeMeta(r)
	}
	b := &r.Bin
	s := fmt.Sprintf("bin op=%#x cmd=%#x opaque=%d", b.Opcode, b.Cmd, b.Opaque)
	if b.Status != StatusOK {
		s += fmt.Sprintf(" status=%#x", b.Status)
	}
	if b.Close {
		s += " close"
	}
	if r.Key != nil {
		s += fmt.Sprintf(" key=%q", r.Key)
	}
	if r.Data != nil {
		s += fmt.Sprintf(" data=%q", r.Data)
	}
	if r.Flags != 0 || r.Exptime != 0 {
		s += fmt.Sprintf(" flags=%d exp=%d", r.Flags, r.Exptime)
	}
	if r.Delta != 0 || b.Initial != 0 {
		s += fmt.Sprintf(" delta=%d initial=%d", r.Delta, b.Initial)
	}
	if r.CAS != 0 {
		s += fmt.Sprintf(" cas=%d", r.CAS)
	}
	if r.Noreply {
		s += " quiet"
	}
	if r.Auth != AuthNone {
		s += fmt.Sprintf(" auth=%d", r.Auth)
	}
	return s
}

func parseAllBin(p *Parser, in []byte) []string {
	var got []string
	var r Request
	for len(in) > 0 {
		n := p.Next(in, &r)
		if n == 0 {
			return append(got, fmt.Sprintf("pending %d need=%d", len(in), p.NeedBytes()))
		}
		if r.Cmd != CmdNone {
			got = append(got, describeBin(&r))
		}
		in = in[n:]
		if (r.Cmd == CmdBinary && r.Bin.Close) || (r.Cmd == CmdError && r.Err.Close) {
			break
		}
	}
	return got
}

func reqs(rs ...binReq) string {
	var b []byte
	for _, r := range rs {
		b = append(b, r.bytes()...)
	}
	return string(b)
}

var noop = binReq{op: OpNoop, opaque: 9}

const noopDesc = "bin op=0xa cmd=0xa opaque=9"

var binCases = []parseCase{
	{"get", reqs(binReq{op: OpGet, key: "k", opaque: 7}), []string{`bin op=0x0 cmd=0x0 opaque=7 key="k"`}},
	{"getq is quiet", reqs(binReq{op: OpGetQ, key: "k"}), []string{`bin op=0x9 cmd=0x0 opaque=0 key="k" quiet`}},
	{"set", reqs(binReq{op: OpSet, key: "k", extras: setExtras(5, 10), value: "hello", cas: 3}),
		[]string{`bin op=0x1 cmd=0x1 opaque=0 key="k" data="hello" flags=5 exp=10 cas=3`}},
	{"setq", reqs(binReq{op: OpSetQ, key: "k", extras: setExtras(0, 0), value: ""}), []string{`bin op=0x11 cmd=0x1 opaque=0 key="k" data="" quiet`}},
	{"incr", reqs(binReq{op: OpIncrement, key: "n", extras: incrExtras(2, 7, 0xffffffff)}),
		[]string{`bin op=0x5 cmd=0x5 opaque=0 key="n" flags=0 exp=4294967295 delta=2 initial=7`}},
	{"append", reqs(binReq{op: OpAppendQ, key: "k", value: "xy"}), []string{`bin op=0x19 cmd=0xe opaque=0 key="k" data="xy" quiet`}},
	{"touch", reqs(binReq{op: OpGATKQ, key: "k", extras: be32(100)}), []string{`bin op=0x24 cmd=0x23 opaque=0 key="k" flags=0 exp=100 quiet`}},
	{"flush with delay", reqs(binReq{op: OpFlushQ, extras: be32(5)}), []string{`bin op=0x18 cmd=0x8 opaque=0 flags=0 exp=5 quiet`}},
	{"pipeline", reqs(binReq{op: OpVersion, opaque: 1}, noop), []string{"bin op=0xb cmd=0xb opaque=1", noopDesc}},
	{"partial header", reqs(noop)[:10], []string{"pending 10 need=24"}},
	{"partial key", reqs(binReq{op: OpGet, key: "abc"})[:25], []string{"pending 25 need=27"}},
	{"partial value", reqs(binReq{op: OpSet, key: "k", extras: setExtras(0, 0), value: "hello"})[:35], []string{"pending 35 need=38"}},
	{"bad magic closes", reqs(noop, binReq{op: OpGet, key: "k", magic: 0x81}), []string{noopDesc, `error "" close`}},
	{"0x81 first is text", reqs(binReq{op: OpGet, key: "k", magic: 0x81}), []string{"pending 25 need=0"}},
	{"key longer than body", reqs(binReq{op: OpGet, key: "kk", bodyLen: 1}), []string{`bin op=0x0 cmd=0x0 opaque=0 status=0x81 close`}},
	{"key 251", reqs(binReq{op: OpGet, key: key251}), []string{`bin op=0x0 cmd=0x0 opaque=0 status=0x4 close`}},
	{"get with extras", reqs(binReq{op: OpGet, key: "k", extras: "abcd"}), []string{`bin op=0x0 cmd=0x0 opaque=0 status=0x4 close`}},
	{"noop with body", reqs(binReq{op: OpNoop, value: "x"}), []string{`bin op=0xa cmd=0xa opaque=0 status=0x4 close`}},
	{"set without key", reqs(binReq{op: OpSet, extras: setExtras(0, 0), value: "x"}), []string{`bin op=0x1 cmd=0x1 opaque=0 status=0x4 close`}},
	{"unknown opcode swallows the body after extras and key", reqs(binReq{op: 0x50, key: "abc", value: "xyz"}, noop, noop),
		[]string{`bin op=0x50 cmd=0x50 opaque=0 status=0x81 key="abc"`, `error "" close`}},
	{"verbosity is unknown", reqs(binReq{op: OpVerbosity}, noop), []string{`bin op=0x1b cmd=0x1b opaque=0 status=0x81`, noopDesc}},
	{"sasl without auth is unknown", reqs(binReq{op: OpSASLAuth, key: "PLAIN", value: "\x00u\x00p"}, noop),
		[]string{`bin op=0x21 cmd=0x21 opaque=0 status=0x81 key="PLAIN"`, noopDesc}},
	{"sasl list without auth", reqs(binReq{op: OpSASLList}, noop), []string{`bin op=0x20 cmd=0x20 opaque=0 status=0x81`, noopDesc}},
	{"set too large is swallowed", reqs(binReq{op: OpSet, key: "big", extras: setExtras(0, 0), value: strings.Repeat("x", 2<<20)}, noop),
		[]string{`bin op=0x1 cmd=0x1 opaque=0 status=0x3 key="big"`, noopDesc}},
	{"stat leaves a value in the stream", reqs(binReq{op: OpStat, key: "reset", value: "zz"}),
		[]string{`bin op=0x10 cmd=0x10 opaque=0 key="reset"`, "pending 2 need=24"}},
	{"text after binary is not text", reqs(noop) + "get a\r\n", []string{noopDesc, "pending 7 need=24"}},
}

func TestBinaryParse(t *testing.T) {
	for _, tc := range binCases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(testMaxValue)
			p.SetItemSizeMax(1<<20, true)
			got := parseAllBin(p, []byte(tc.in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("input %q\n got %s\nwant %s", quoteShort(tc.in), quoteAll(got), quoteAll(tc.want))
			}
		})
	}
}

func TestBinaryAuth(t *testing.T) {
	check := func(u, pw []byte) bool { return string(u) == "user" && string(pw) == "pass" }
	plain := func(msg string) binReq { return binReq{op: OpSASLAuth, key: "PLAIN", value: msg} }
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"unauthenticated get closes", reqs(binReq{op: OpGet, key: "k"}),
			[]string{`bin op=0x0 cmd=0x0 opaque=0 status=0x20 close auth=5`}},
		{"version and list are allowed", reqs(binReq{op: OpVersion}, binReq{op: OpSASLList}),
			[]string{"bin op=0xb cmd=0xb opaque=0", "bin op=0x20 cmd=0x20 opaque=0"}},
		{"plain", reqs(plain("\x00user\x00pass"), binReq{op: OpGet, key: "k"}),
			[]string{`bin op=0x21 cmd=0x21 opaque=0 key="PLAIN" data="\x00user\x00pass" auth=1`, `bin op=0x0 cmd=0x0 opaque=0 key="k"`}},
		{"plain with authzid", reqs(plain("user\x00user\x00pass")), []string{`bin op=0x21 cmd=0x21 opaque=0 key="PLAIN" data="user\x00user\x00pass" auth=1`}},
		{"plain other authzid", reqs(plain("root\x00user\x00pass")), []string{`bin op=0x21 cmd=0x21 opaque=0 key="PLAIN" data="root\x00user\x00pass" auth=2`}},
		{"wrong password", reqs(plain("\x00user\x00nope"), binReq{op: OpGet, key: "k"}),
			[]string{`bin op=0x21 cmd=0x21 opaque=0 key="PLAIN" data="\x00user\x00nope" auth=2`, `bin op=0x0 cmd=0x0 opaque=0 status=0x20 close auth=5`}},
		{"other mechanism", reqs(binReq{op: OpSASLAuth, key: "CRAM-MD5", value: "x"}), []string{`bin op=0x21 cmd=0x21 opaque=0 key="CRAM-MD5" data="x" auth=2`}},
		{"step fails", reqs(binReq{op: OpSASLStep, key: "PLAIN", value: "\x00user\x00pass"}), []string{`bin op=0x22 cmd=0x22 opaque=0 key="PLAIN" data="\x00user\x00pass" auth=2`}},
		{"list resets", reqs(plain("\x00user\x00pass"), binReq{op: OpSASLList}, binReq{op: OpGet, key: "k"}),
			[]string{`bin op=0x21 cmd=0x21 opaque=0 key="PLAIN" data="\x00user\x00pass" auth=1`, "bin op=0x20 cmd=0x20 opaque=0", `bin op=0x0 cmd=0x0 opaque=0 status=0x20 close auth=5`}},
		{"mechanism too long", reqs(binReq{op: OpSASLAuth, key: strings.Repeat("M", 33), value: "abc"}, binReq{op: OpVersion}),
			[]string{`bin op=0x21 cmd=0x21 opaque=0 status=0x4 key="` + strings.Repeat("M", 33) + `"`, "bin op=0xb cmd=0xb opaque=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(testMaxValue)
			p.RequireAuth(check)
			got := parseAllBin(p, []byte(tc.in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("input %q\n got %s\nwant %s", tc.in, quoteAll(got), quoteAll(tc.want))
			}
		})
	}
}

func TestTextAuth(t *testing.T) {
	check := func(u, pw []byte) bool { return string(u) == "user" && string(pw) == "pass" }
	tests := []struct {
		name, in string
		want     []string
	}{
		{"other command", "get a\r\n", []string{"auth auth=5"}},
		{"ok then commands", "set x 0 0 9\r\nuser pass\r\nget a\r\n", []string{"auth auth=1", `get keys=["a"]`}},
		{"wrong password", "set x 0 0 9\r\nuser pasz\r\nget a\r\n", []string{"auth auth=2", "auth auth=5"}},
		{"one token", "set x 0 0 4\r\nuser\r\n", []string{"auth auth=3"}},
		{"bad termination", "set x 0 0 9\r\nuser passXY", []string{"auth auth=4"}},
		{"short line", "set x 0 0\r\nuser pass\r\n", []string{"auth auth=5", "auth auth=5"}},
		{"extra tokens and spaces", "set x 0 0 13\r\n user  pass x\r\n", []string{"auth auth=1"}},
		{"waits for data", "set x 0 0 9\r\nuser", []string{"pending 17 need=24"}},
		{"no newline", strings.Repeat("x", 3000), []string{`error "" close`}},
		{"binary still detected", reqs(binReq{op: OpVersion}), []string{"bin op=0xb cmd=0xb opaque=0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(testMaxValue)
			p.RequireAuth(check)
			got := parseAllBin(p, []byte(tc.in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("input %q\n got %s\nwant %s", tc.in, quoteAll(got), quoteAll(tc.want))
			}
		})
	}
}

func TestSetDialect(t *testing.T) {
	p := NewParser(testMaxValue)
	p.SetDialect(DialectText)
	if got := parseAllBin(p, []byte("\x80\x00\x00\r\n")); !slices.Equal(got, []string{`error "ERROR"`}) {
		t.Errorf("-B ascii: %q", got)
	}
	p = NewParser(testMaxValue)
	p.SetDialect(DialectBinary)
	if got := parseAllBin(p, []byte("get a b c d e f g h i j k\r\n")); !slices.Equal(got, []string{`error "" close`}) {
		t.Errorf("-B binary: %q", got)
	}
}

func TestBinaryNoAllocs(t *testing.T) {
	p := NewParser(1 << 20)
	in := []byte(reqs(binReq{op: OpGet, key: "user:1234"}, binReq{op: OpSet, key: "user:1234", extras: setExtras(1, 2), value: "value"}))
	var r Request
	allocs := testing.AllocsPerRun(100, func() {
		rest := in
		for len(rest) > 0 {
			rest = rest[p.Next(rest, &r):]
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per parse", allocs)
	}
}

func TestBinaryReply(t *testing.T) {
	got := AppendBinError(nil, OpGet, StatusKeyNotFound, 7, "")
	want := "\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x09\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00Not found"
	if string(got) != want {
		t.Errorf("AppendBinError = %q\nwant %q", got, want)
	}
	got = AppendBinValue(nil, BinResponse{Opcode: OpGetK, Opaque: 1, CAS: 2}, []byte{0, 0, 0, 5}, []byte("k"), []byte("v"))
	want = "\x81\x0c\x00\x01\x04\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x05kv"
	if string(got) != want {
		t.Errorf("AppendBinValue = %q\nwant %q", got, want)
	}
}

func BenchmarkParseBinaryGet(b *testing.B) {
	benchParse(b, reqs(binReq{op: OpGet, key: "user:1234567"}))
}

// FuzzBinaryParser checks Next's contract on binary input: no panic, n
// within buf, slices inside buf, nothing buffered past the item size limit,
// and the same requests whether the input arrives whole or in chunks.
func FuzzBinaryParser(f *testing.F) {
	for _, tc := range binCases {
		if len(tc.in) <= 4096 {
			f.Add([]byte(tc.in), uint8(3), false)
		}
	}
	f.Add([]byte(reqs(binReq{op: OpSASLAuth, key: "PLAIN", value: "\x00user\x00pass"}, binReq{op: OpGet, key: "k"})), uint8(5), true)
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, auth bool) {
		newP := func() *Parser {
			p := NewParser(64)
			p.SetDialect(DialectBinary)
			if auth {
				p.RequireAuth(func(u, pw []byte) bool { return string(u) == "user" && string(pw) == "pass" })
			}
			return p
		}
		p := newP()
		var r Request
		var whole []string
		buf := in
		for len(buf) > 0 {
			n := p.Next(buf, &r)
			if n == 0 {
				if need := p.NeedBytes(); need > BinHeaderLen+255+MaxKeyLen+64+2 {
					t.Fatalf("input %q: wants to buffer %d bytes", in, need)
				}
				break
			}
			if e := checkRequest(buf, n, &r); e != "" {
				t.Fatalf("input %q: %s", in, e)
			}
			if r.Cmd != CmdNone {
				whole = append(whole, describeBin(&r))
			}
			buf = buf[n:]
			if (r.Cmd == CmdBinary && r.Bin.Close) || (r.Cmd == CmdError && r.Err.Close) {
				buf = nil
				break
			}
		}
		size := int(chunk%32) + 1
		var got []string
		left, e := streamFunc(newP(), in, func() int { return size }, func(r *Request) {
			got = append(got, describeBin(r))
		})
		if e != "" {
			t.Fatalf("input %q in chunks of %d: %s", in, size, e)
		}
		// A closing request ends both runs; streamFunc stops on CmdError
		// closes only, so compare up to the first close.
		for i, g := range got {
			if strings.Contains(g, " close") {
				got = got[:i+1]
				left = 0
				break
			}
		}
		if !slices.Equal(got, whole) || (left != len(buf) && len(buf) != 0) {
			t.Fatalf("input %s in chunks of %d:\n got %s (left %d)\nwant %s (left %d)", quoteShort(string(in)), size, quoteAll(got), left, quoteAll(whole), len(buf))
		}
	})
}
