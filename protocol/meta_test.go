package protocol

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func init() {
	for c, name := range map[Command]string{CmdMetaGet: "mg", CmdMetaSet: "ms", CmdMetaDelete: "md",
		CmdMetaArithmetic: "ma", CmdMetaNoop: "mn", CmdMetaDebug: "me", CmdTextAuth: "auth"} {
		cmdNames[c] = name
	}
}

// describeMeta renders r like describe, plus its meta fields.
func describeMeta(r *Request) string {
	if r.Cmd == CmdError {
		s := fmt.Sprintf("error %q", r.Err.Reply)
		if r.Err.Close {
			s += " close"
		}
		return s
	}
	s := describe(r)
	if !r.isMeta() {
		if r.Cmd == CmdTextAuth {
			s += fmt.Sprintf(" auth=%d", r.Auth)
		}
		return s
	}
	m := &r.Meta
	if m.n > 0 {
		s += " flags=" + string(m.Order())
	}
	if m.Opaque != nil {
		s += fmt.Sprintf(" opaque=%q", m.Opaque)
	}
	if m.OpaqueTooLong {
		s += " opaque-too-long"
	}
	if m.Mode != 0 {
		s += " mode=" + string(m.Mode)
	}
	if m.Has('b') {
		s += fmt.Sprintf(" keylen=%d", m.KeyLen)
	}
	if m.VivifyTTL != 0 {
		s += fmt.Sprintf(" N=%d", m.VivifyTTL)
	}
	if m.RecacheTTL != 0 {
		s += fmt.Sprintf(" R=%d", m.RecacheTTL)
	}
	if m.Initial != 0 {
		s += fmt.Sprintf(" J=%d", m.Initial)
	}
	if m.TooLarge {
		s += " too-large"
	}
	return s
}

// Shorthands for meta error descriptions.
const (
	eMetaFormat  = `error "CLIENT_ERROR bad command line format"`
	eDup         = `error "CLIENT_ERROR duplicate flag"`
	eInvalid     = `error "CLIENT_ERROR invalid flag"`
	eInvalidOr   = `error "CLIENT_ERROR invalid or duplicate flag"`
	eBadToken    = `error "CLIENT_ERROR bad token in command line format"`
	eDecodingKey = `error "CLIENT_ERROR error decoding key"`
	eChunkMeta   = `error "CLIENT_ERROR bad data chunk"`
)

var metaCases = []parseCase{
	{"mn", "mn\r\n", []string{"mn"}},
	{"mn with arguments", "mn a b\r\n", []string{"mn"}},
	{"mx is unknown", "mx k\r\n", []string{eUnknown}},
	// memcached 1.6.45 (transcript.Differences, meta without key).
	{"mg without key", "mg\r\nmd \r\nms\r\nma\r\n", []string{eMetaFormat, eMetaFormat, eMetaFormat, eMetaFormat}},
	{"mg key only", "mg k\r\n", []string{`mg key="k"`}},
	{"mg flags in order", "mg k v t O12 k s\r\n", []string{`mg key="k" flags=vtOks opaque="O12"`}},
	{"mg q sets noreply", "mg k q v\r\n", []string{`mg key="k" noreply flags=qv`}},
	{"mg numeric flags", "mg k T30 N-5 R7\r\n", []string{`mg key="k" exp=30 flags=TNR N=-5 R=7`}},
	// E (explicit CAS) is newer than memcached 1.6.18, which refuses it
	// whatever its token.
	// E and x: accepted as memcached 1.6.45 does (1.6.18 refused them; see
	// transcript.Differences).
	{"mg E", "mg k E99\r\n", []string{`mg key="k" flags=E`}},
	{"mg E bad token", "mg k Eabc\r\n", []string{`error "CLIENT_ERROR bad token in command line format"`}},
	{"ms E", "ms k 1 E5\r\nx\r\n", []string{`ms key="k" data="x" flags=E`}},
	{"md E", "md k E5\r\n", []string{`md key="k" flags=E`}},
	{"md E bad token", "md k E-\r\n", []string{eBadToken}},
	{"ma E", "ma k E5\r\n", []string{`ma key="k" delta=1 flags=E`}},
	{"md x", "md k x q\r\n", []string{`md key="k" noreply flags=xq`}},
	{"mg key 251", "mg " + key251 + "\r\n", []string{eMetaFormat}},
	{"mg duplicate", "mg k v v\r\n", []string{eDup}},
	// memcached 1.6.45: a flag that starts with neither a letter nor a
	// digit is a format error before anything else (meta flag byte).
	{"mg byte over 126", "mg k \xff\r\n", []string{eMetaFormat}},
	{"mg no flag byte", "mg k ~\r\nmg k -1\r\nmg k \t\r\nmg k {\r\nmg k @\r\n", []string{eMetaFormat, eMetaFormat, eMetaFormat, eMetaFormat, eMetaFormat}},
	{"mg no flag byte first", "mg " + key251 + " ~\r\n", []string{eMetaFormat}},
	{"mg invalid", "mg k 1\r\nmg k [\r\nmg k _\r\nmg k a\r\n", []string{eInvalid, eInvalid, eInvalid, eInvalid}},
	{"mg bad T", "mg k Tx\r\n", []string{eBadToken}},
	{"mg bad F keeps the default message", "mg k Fx\r\n", []string{eMetaFormat}},
	{"mg last message wins", "mg k Tx Fx\r\n", []string{eBadToken}},
	{"mg invalid beats bad token", "mg k Tx a\r\n", []string{eInvalid}},
	{"mg no flag byte beats invalid", "mg k a ~\r\n", []string{eMetaFormat}},
	// memcached 1.6.45 takes the byte after M (meta M token).
	{"mg M any length", "mg k MEE\r\n", []string{`mg key="k" flags=M mode=E`}},
	{"mg lone M", "mg k M\r\n", []string{`mg key="k" flags=M mode= `}},
	// memcached 1.6.45: 20 tokens (meta flag count).
	{"mg 18 flags", "mg k a b c d e f g h i j k l m n o p q r\r\n", []string{eInvalid}},
	{"mg too many flags", "mg k a b c d e f g h i j k l m n o p q r s\r\n", []string{`error "CLIENT_ERROR options flags are too long"`}},
	{"mg too many flags beats no flag byte past 23 tokens", "mg k a b c d e f g h i j k l m n o p q r s t u ~\r\n", []string{`error "CLIENT_ERROR options flags are too long"`}},
	{"mg no flag byte in 23 tokens", "mg k a b c d e f g h i j k l m n o p q r s t ~\r\n", []string{eMetaFormat}},
	// memcached 1.6.45 reads numbers strictly (meta numbers).
	{"mg strict numbers", "mg k T+5\r\nmg k T000000000005\r\nmg k T-2147483649\r\nmg k C00000000000000000000001\r\n",
		[]string{eBadToken, eBadToken, eBadToken, eBadToken}},
	{"mg numbers at their limits", "mg k T-2147483648 R- N00000000001 C0018446744073709551615\r\n",
		[]string{`mg key="k" exp=-2147483648 cas=18446744073709551615 flags=TRNC N=1`}},
	{"mg long opaque is found later", "mg k O123456789012345678901234567890123\r\n", []string{`mg key="k" flags=O opaque="O123456789012345678901234567890123" opaque-too-long`}},
	{"mg base64", "mg cGE= b v\r\n", []string{`mg key="cGE=" flags=bv keylen=2`}},
	{"mg base64 bad", "mg cGE b\r\n", []string{eDecodingKey}},
	{"ms", "ms k 2 T5 F3 c\r\nab\r\n", []string{`ms key="k" flags=3 exp=5 data="ab" flags=TFc`}},
	{"ms mode", "ms k 1 MA q\r\nx\r\n", []string{`ms key="k" data="x" noreply flags=Mq mode=A`}},
	{"ms without datalen", "ms k\r\n", []string{eMetaFormat}},
	{"ms bad datalen does not swallow", "ms k x\r\nab\r\n", []string{eMetaFormat, eUnknown}},
	{"ms negative datalen", "ms k -1\r\n", []string{eMetaFormat}},
	{"ms flag error swallows", "ms k 2 a\r\nab\r\nmn\r\n", []string{eInvalid, "mn"}},
	{"ms no flag byte does not swallow", "ms k 2 ~\r\nabcd\r\nmn\r\n", []string{eMetaFormat, eUnknown, "mn"}},
	{"ms length then a tab or CR", "ms k 1\r\r\nmg k T1\t\r\n", []string{eMetaFormat, eBadToken}},
	{"ms strict length", "ms k +1\r\nms k 000000000001\r\nms k - q\r\n\r\n", []string{eMetaFormat, eMetaFormat, `ms key="k" data="" noreply flags=q`}},
	{"ms F over 32 bits", "ms k 1 F4294967296\r\nx\r\nms k 1 F4294967295\r\nx\r\n", []string{eMetaFormat, `ms key="k" flags=4294967295 data="x" flags=F`}},
	{"ms lone M", "ms k 1 M\r\nx\r\nms k 1 MEE\r\nx\r\n", []string{`error "CLIENT_ERROR invalid mode for ms M token"`, `ms key="k" data="x" flags=M mode=E`}},
	{"ms key 251 swallows", "ms " + key251 + " 2\r\nab\r\nmn\r\n", []string{eMetaFormat, "mn"}},
	{"ms key 251 with a bad length does not swallow", "ms " + key251 + " x\r\nabcd\r\n", []string{eMetaFormat, eUnknown}},
	{"ms bad mode swallows", "ms k 2 MX\r\nab\r\nmn\r\n", []string{`error "CLIENT_ERROR invalid mode for ms M token"`, "mn"}},
	{"ms long opaque swallows", "ms k 2 O123456789012345678901234567890123\r\nab\r\nmn\r\n", []string{`error "CLIENT_ERROR opaque token too long"`, "mn"}},
	{"ms 17 flags", "ms k 2 a b c d e f g h i j k l m n o p q\r\nab\r\n", []string{eInvalid}},
	{"ms too many flags swallows", "ms k 2 a b c d e f g h i j k l m n o p q r\r\nab\r\nmn\r\n", []string{`error "CLIENT_ERROR options flags are too long"`, "mn"}},
	{"ms bad chunk", "ms k 2\r\nabcd\r\n", []string{eChunkMeta, eFormat}},
	{"ms bad chunk with q is not silent", "ms k 2 q\r\nabcd\r\n", []string{eChunkMeta, eFormat}},
	{"ms incomplete", "ms k 5\r\nab", []string{"pending 10 need=15"}},
	{"ms too large", "ms k 2000000\r\n", []string{`ms key="k" too-large`}},
	{"ms base64 key counts decoded", "ms cGE= 1 b\r\nx\r\n", []string{`ms key="cGE=" data="x" flags=b keylen=2`}},
	{"md", "md k q C5 I T3\r\n", []string{`md key="k" exp=3 cas=5 noreply flags=qCIT`}},
	// memcached 1.6.45 names md's flag error (md flag errors).
	{"md flag errors", "md k ~\r\nmd k s s\r\nmd k Tx\r\nmd k a\r\nmd k b\r\nmd k F4294967296\r\n",
		[]string{eMetaFormat, eDup, eBadToken, eInvalid, eDecodingKey, eMetaFormat}},
	{"md M", "md k M q\r\n", []string{`md key="k" noreply flags=Mq mode= `}},
	{"md long opaque", "md k O123456789012345678901234567890123\r\n", []string{`error "CLIENT_ERROR opaque token too long"`}},
	{"md too many flags", "md k a b c d e f g h i j k l m n o p q r s\r\n", []string{`error "CLIENT_ERROR options flags are too long"`}},
	{"ma default delta", "ma k\r\n", []string{`ma key="k" delta=1`}},
	{"ma flags", "ma k MD D5 J7 N0 v\r\n", []string{`ma key="k" delta=5 flags=MDJNv mode=D J=7`}},
	{"ma bad mode", "ma k MX\r\n", []string{`error "CLIENT_ERROR invalid mode for ma M token"`}},
	{"ma flag errors", "ma k D\r\nma k J\r\nma k D-1\r\nma k ~\r\nma k a b c d e f g h i j k l m n o p q r s\r\n", []string{eInvalidOr, eInvalidOr, eInvalidOr, eMetaFormat, eInvalidOr}},
	{"ma lone M", "ma k M\r\n", []string{`error "CLIENT_ERROR invalid mode for ma M token"`}},
	{"me", "me k\r\n", []string{`me key="k"`}},
	{"me without key", "me\r\n", []string{eMetaFormat}},
	{"me b", "me cGE= b x y\r\n", []string{`me key="cGE=" flags=b keylen=2`}},
	// memcached 1.6.45 decodes only when a token follows the b (me b).
	{"me b last", "me k b\r\n", []string{`me key="k"`}},
	{"me bad b", "me k b x\r\n", []string{eMetaFormat}},
	{"me no flag byte", "me k ~\r\n", []string{eMetaFormat}},
	{"meta after text", "get a\r\nmg k v\r\nget b\r\n", []string{`get keys=["a"]`, `mg key="k" flags=v`, `get keys=["b"]`}},
}

// parseAllMeta is parseAll with describeMeta.
func parseAllMeta(p *Parser, in []byte) []string {
	var got []string
	var r Request
	for len(in) > 0 {
		n := p.Next(in, &r)
		if n == 0 {
			return append(got, fmt.Sprintf("pending %d need=%d", len(in), p.NeedBytes()))
		}
		if r.Cmd != CmdNone {
			got = append(got, describeMeta(&r))
		}
		in = in[n:]
	}
	return got
}

func TestMetaParse(t *testing.T) {
	for _, tc := range metaCases {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParser(testMaxValue)
			p.SetItemSizeMax(1<<20, true)
			got := parseAllMeta(p, []byte(tc.in))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("input %q\n got %s\nwant %s", tc.in, quoteAll(got), quoteAll(tc.want))
			}
		})
	}
}

func TestMetaFlagsHasOrder(t *testing.T) {
	var m MetaArgs
	for _, c := range []byte("vqOzAZ") {
		m.add(c)
	}
	if string(m.Order()) != "vqOzAZ" || !m.Has('v') || !m.Has('Z') || !m.Has('A') || m.Has('k') || m.Has('0') {
		t.Fatalf("order %q, has v=%v Z=%v k=%v", m.Order(), m.Has('v'), m.Has('Z'), m.Has('k'))
	}
}

func TestDecodeBase64Key(t *testing.T) {
	tests := []struct{ in, want string }{
		{"cGE=", "pa"},
		{"bXQ6bQ==", "mt:m"},
		{"b!XQ6bg==", "mt:n"}, // bytes outside the alphabet are skipped
		{"cG=E", "p`"},        // decoding stops after the block with padding
		{"cGE", ""},
		{"cGE==", ""},
		{"!!!!", ""},
		{"A===", ""},
		{"====", ""},
		{"dmZ4", "vfx"},
		{"YWJjZA==ZZZZ", "abcd"},
	}
	for _, tc := range tests {
		dst := make([]byte, len(tc.in))
		n := DecodeBase64Key(dst, []byte(tc.in))
		if string(dst[:n]) != tc.want || DecodeBase64Key(nil, []byte(tc.in)) != n {
			t.Errorf("DecodeBase64Key(%q) = %q, want %q", tc.in, dst[:n], tc.want)
		}
	}
	if got := string(AppendBase64(nil, []byte("p`"))); got != "cGA=" {
		t.Errorf("AppendBase64 = %q", got)
	}
}

// metaTranscript is a pipeline of meta commands for split invariance.
func metaTranscript() string {
	return "mg k v f t c s k O1 q\r\nms k 5 T10 F3 MS c\r\nhello\r\nms k 2 ~\r\nab\r\n" +
		"md k q C9 I T5\r\nma k N0 J5 D3 MD v\r\nmn\r\nme cGE= b\r\nms k 2000000\r\n" +
		strings.Repeat("z", 2000) + "ms k x\r\nms k 3 q\r\nabcde\r\nmg cGE b\r\nmn\r\n"
}

// TestMetaSplitInvariance cuts a meta pipeline at every byte offset: the
// requests must be the same as when it arrives whole.
func TestMetaSplitInvariance(t *testing.T) {
	in := []byte(metaTranscript())
	newP := func() *Parser {
		p := NewParser(1000)
		return p
	}
	var whole []string
	if left, e := streamFunc(newP(), in, func() int { return len(in) }, func(r *Request) { whole = append(whole, describeMeta(r)) }); e != "" || left != 0 {
		t.Fatalf("whole: %s (left %d)", e, left)
	}
	for cut := 1; cut < len(in); cut++ {
		sizes := []int{cut, len(in)}
		i := 0
		var got []string
		_, e := streamFunc(newP(), in, func() int { s := sizes[min(i, 1)]; i++; return s }, func(r *Request) { got = append(got, describeMeta(r)) })
		if e != "" || !slices.Equal(got, whole) {
			t.Fatalf("cut at %d: %s\n got %s\nwant %s", cut, e, quoteAll(got), quoteAll(whole))
		}
	}
}

func TestMetaNoAllocs(t *testing.T) {
	p := NewParser(1 << 20)
	in := []byte("mg user:1234567 v f t c k O123 q\r\nms user:1234567 5 T10 F3 c\r\nhello\r\n")
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

func BenchmarkParseMetaGet(b *testing.B) { benchParse(b, "mg user:1234567 v f t c k\r\n") }

func BenchmarkParseMetaSet32(b *testing.B) {
	benchParse(b, "ms user:1234567 32 T100 F5\r\n01234567890123456789012345678901\r\n")
}

// FuzzMetaParser checks Next's contract on meta input: no panic, n within
// buf, slices inside buf, progress whenever a complete request is buffered,
// and the same requests whether the input arrives whole or in chunks.
func FuzzMetaParser(f *testing.F) {
	for _, tc := range metaCases {
		f.Add([]byte(tc.in), uint8(3))
	}
	f.Add([]byte(metaTranscript()), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		p := fuzzParser(chunk)
		var r Request
		var whole []string
		buf := in
		for len(buf) > 0 {
			n := p.Next(buf, &r)
			if n == 0 {
				break
			}
			if e := checkRequest(buf, n, &r); e != "" {
				t.Fatalf("input %q: %s", in, e)
			}
			if r.isMeta() && r.Meta.Opaque != nil && len(r.Meta.Opaque) > 0 && r.Meta.Opaque[0] != 'O' {
				t.Fatalf("input %q: opaque %q", in, r.Meta.Opaque)
			}
			if r.Cmd != CmdNone {
				whole = append(whole, describeMeta(&r))
			}
			buf = buf[n:]
			if r.Cmd == CmdError && r.Err.Close {
				return
			}
		}
		if p.Dialect() == DialectBinary {
			return
		}
		size := int(chunk%16) + 1
		var got []string
		left, e := streamFunc(fuzzParser(chunk), in, func() int { return size }, func(r *Request) { got = append(got, describeMeta(r)) })
		if e != "" {
			t.Fatalf("input %q in chunks of %d: %s", in, size, e)
		}
		if len(got) > 0 && strings.HasPrefix(got[len(got)-1], eClose) {
			return
		}
		if !slices.Equal(got, whole) || left != len(buf) {
			t.Fatalf("input %s in chunks of %d:\n got %s (left %d)\nwant %s (left %d)", quoteShort(string(in)), size, quoteAll(got), left, quoteAll(whole), len(buf))
		}
	})
}
