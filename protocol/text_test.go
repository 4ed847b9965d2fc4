package protocol

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/tandemcache/tandem/protocol/transcript"
)

var cmdNames = map[Command]string{
	CmdNone: "none", CmdError: "error", CmdGet: "get", CmdGets: "gets", CmdGat: "gat",
	CmdGats: "gats", CmdSet: "set", CmdAdd: "add", CmdReplace: "replace", CmdAppend: "append",
	CmdPrepend: "prepend", CmdCas: "cas", CmdDelete: "delete", CmdIncr: "incr", CmdDecr: "decr",
	CmdTouch: "touch", CmdFlushAll: "flush_all", CmdVersion: "version", CmdVerbosity: "verbosity",
	CmdStats: "stats", CmdQuit: "quit", CmdShutdown: "shutdown", CmdBinary: "binary",
	CmdLruCrawler: "lru_crawler", CmdSlabs: "slabs", CmdWatch: "watch", CmdCacheMemlimit: "cache_memlimit",
	CmdRefreshCerts: "refresh_certs", CmdLru: "lru",
}

func cmdName(c Command) string {
	if s, ok := cmdNames[c]; ok {
		return s
	}
	return fmt.Sprintf("cmd(%d)", c)
}

// describe renders the text-protocol fields of r canonically, for comparing
// parse results in tests.
func describe(r *Request) string {
	var b strings.Builder
	b.WriteString(cmdName(r.Cmd))
	if r.Cmd == CmdError {
		fmt.Fprintf(&b, " %q", r.Err.Reply)
		if r.Err.Close {
			b.WriteString(" close")
		}
		if r.FailedCmd != CmdNone {
			b.WriteString(" failed=" + cmdName(r.FailedCmd))
		}
	}
	if len(r.Keys) > 0 {
		fmt.Fprintf(&b, " keys=%q", r.Keys)
	} else if r.Key != nil {
		fmt.Fprintf(&b, " key=%q", r.Key)
	}
	if r.Flags != 0 {
		fmt.Fprintf(&b, " flags=%d", r.Flags)
	}
	if r.Exptime != 0 {
		fmt.Fprintf(&b, " exp=%d", r.Exptime)
	}
	if r.Delta != 0 {
		fmt.Fprintf(&b, " delta=%d", r.Delta)
	}
	if r.CAS != 0 {
		fmt.Fprintf(&b, " cas=%d", r.CAS)
	}
	if r.Data != nil {
		fmt.Fprintf(&b, " data=%q", r.Data)
	}
	if len(r.Args) > 0 {
		fmt.Fprintf(&b, " args=%q", r.Args)
	}
	if r.Noreply {
		b.WriteString(" noreply")
	}
	return b.String()
}

// checkRequest reports a violation of Next's contract for a request parsed
// from buf with n bytes consumed, or "".
func checkRequest(buf []byte, n int, r *Request) string {
	if n < 0 || n > len(buf) {
		return fmt.Sprintf("n=%d outside buf of %d bytes", n, len(buf))
	}
	if r.Cmd == CmdError && r.Err == nil {
		return "CmdError without Err"
	}
	if r.Cmd != CmdError && r.Err != nil {
		return "Err set on " + cmdName(r.Cmd)
	}
	if len(r.Keys) > 0 && (r.Key == nil || unsafe.SliceData(r.Key) != unsafe.SliceData(r.Keys[0]) || len(r.Key) != len(r.Keys[0])) {
		return "Key != Keys[0]"
	}
	slices := [][]byte{r.Key, r.Data}
	slices = append(slices, r.Keys...)
	slices = append(slices, r.Args...)
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	for _, s := range slices {
		if s == nil {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		if p < base || p+uintptr(len(s)) > base+uintptr(len(buf)) {
			return fmt.Sprintf("slice %q outside buf", s)
		}
	}
	return ""
}

// parseAll parses in as one buffer, as often as Next makes progress. It
// returns the descriptions and, when bytes are left, a final
// "pending <left> need=<NeedBytes>" entry. It stops at an error that closes
// the connection.
func parseAll(p *Parser, in []byte) (got []string, err string) {
	var r Request
	for len(in) > 0 {
		n := p.Next(in, &r)
		if n == 0 {
			got = append(got, fmt.Sprintf("pending %d need=%d", len(in), p.NeedBytes()))
			return got, ""
		}
		if e := checkRequest(in, n, &r); e != "" {
			return got, e
		}
		got = append(got, describe(&r))
		if r.Cmd == CmdError && r.Err.Close {
			break // the connection is closed
		}
		in = in[n:]
	}
	return got, ""
}

// stream feeds in to a parser in chunks of the given sizes, like a
// connection buffer that grows and is consumed from the front. CmdNone
// entries are dropped: how many a swallow takes depends on chunking. It
// stops at an error that closes the connection. It returns the descriptions
// and the bytes left unconsumed.
func stream(p *Parser, in []byte, sizes func() int) (got []string, left int, err string) {
	left, err = streamFunc(p, in, sizes, func(r *Request) { got = append(got, describe(r)) })
	return got, left, err
}

// streamFunc is stream calling emit for each request instead.
func streamFunc(p *Parser, in []byte, sizes func() int, emit func(*Request)) (left int, err string) {
	var r Request
	done, off := 0, 0 // in[done:off] is the unconsumed input received so far
	for off < len(in) {
		off += min(max(sizes(), 1), len(in)-off)
		for done < off {
			pending := in[done:off:off] // no capacity past the received bytes
			n := p.Next(pending, &r)
			if n == 0 {
				break
			}
			if e := checkRequest(pending, n, &r); e != "" {
				return 0, e
			}
			if r.Cmd != CmdNone {
				emit(&r)
			}
			if r.Cmd == CmdError && r.Err.Close {
				return 0, "" // the connection is closed
			}
			done += n
		}
	}
	return len(in) - done, ""
}

// fingerprint hashes the fields describe shows, without allocating.
func fingerprint(r *Request) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
		h = (h ^ 0xff) * 1099511628211
	}
	num := func(v uint64) {
		for i := 0; i < 8; i++ {
			h = (h ^ (v & 0xff)) * 1099511628211
			v >>= 8
		}
	}
	num(uint64(r.Cmd)<<8 | uint64(r.FailedCmd))
	if r.Err != nil {
		mix([]byte(r.Err.Reply))
	}
	mix(r.Key)
	for _, k := range r.Keys {
		mix(k)
	}
	num(uint64(r.Flags))
	num(uint64(r.Exptime))
	num(r.Delta)
	num(r.CAS)
	mix(r.Data)
	if r.Data == nil {
		num(1)
	}
	for _, a := range r.Args {
		mix(a)
	}
	if r.Noreply {
		num(2)
	}
	return h
}

func loadTranscripts(t *testing.T) []transcript.Case {
	t.Helper()
	cases, err := transcript.LoadDir("testdata/transcripts")
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// TestTranscripts parses every transcript case in the chunks its pauses
// define. Every request must be consumed (or the connection closed). Where
// the case holds no command that needs the cache, the expected reply is
// computed from the parse alone and must equal memcached's.
func TestTranscripts(t *testing.T) {
	cases := loadTranscripts(t)
	checked := 0
	for _, tc := range cases {
		p := NewParser(1 << 20)
		p.SetItemSizeMax(1<<20, true)
		var r Request
		var pending, reply []byte
		closed, replyKnown := false, true
	feed:
		for _, seg := range tc.Segments {
			pending = append(pending, seg...)
			for len(pending) > 0 {
				n := p.Next(pending, &r)
				if n == 0 {
					break
				}
				if e := checkRequest(pending, n, &r); e != "" {
					t.Fatalf("%s: %s: %s", tc.File, tc.Name, e)
				}
				pending = pending[n:]
				switch {
				case r.Cmd == CmdNone:
				case r.Cmd == CmdError:
					if !(r.Err.Silent && r.Noreply) {
						reply = AppendError(reply, r.Err)
					}
					if r.Err.Close {
						closed = true
						break feed
					}
				case r.Cmd == CmdQuit:
					closed = true
					break feed
				default:
					replyKnown = false
				}
			}
		}
		if !closed && len(pending) > 0 {
			t.Errorf("%s: %s: %d bytes left unparsed: %s", tc.File, tc.Name, len(pending), quoteShort(string(pending)))
			continue
		}
		if closed != tc.Close && (replyKnown || closed) {
			t.Errorf("%s: %s: parser closed=%v, memcached closed=%v", tc.File, tc.Name, closed, tc.Close)
		}
		if replyKnown {
			checked++
			if !bytes.Equal(reply, tc.Want()) {
				t.Errorf("%s: %s\n got reply: %q\n    want: %q", tc.File, tc.Name, reply, tc.Want())
			}
		}
	}
	t.Logf("%d transcript cases parsed, %d replies checked from the parse alone", len(cases), checked)
}

// FuzzTextParser checks Next's contract on arbitrary input: no panic, n
// within buf, slices inside buf, progress whenever a complete request is
// buffered, and the same requests whether the input arrives whole or in
// chunks of the fuzzed size.
// fuzzParser is the parser a fuzz input runs on: chunk's top bit turns large
// client flags on.
func fuzzParser(chunk uint8) *Parser {
	p := NewParser(64)
	p.SetLargeClientFlags(chunk&0x80 != 0)
	return p
}

func FuzzTextParser(f *testing.F) {
	for _, tc := range parseCases {
		if len(tc.in) <= 4096 {
			f.Add([]byte(tc.in), uint8(3))
		}
	}
	f.Add([]byte(splitTranscript()), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		p := fuzzParser(chunk)
		var r Request
		var whole []string
		closed := false
		buf := in
		for len(buf) > 0 {
			n := p.Next(buf, &r)
			if n == 0 {
				break
			}
			if e := checkRequest(buf, n, &r); e != "" {
				t.Fatalf("input %q: %s", in, e)
			}
			if r.Cmd != CmdNone {
				whole = append(whole, describe(&r))
			}
			buf = buf[n:]
			if r.Cmd == CmdError && r.Err.Close {
				closed = true
				break
			}
		}
		if !closed && len(buf) > 0 {
			// Waiting is only allowed for an incomplete line or data block.
			if n := p.Next(buf, &r); n != 0 {
				t.Fatalf("input %q: second call on the same %d bytes consumed %d", in, len(buf), n)
			}
			need := p.NeedBytes()
			waitingLine := bytes.IndexByte(buf, '\n') < 0 && (len(buf) <= lineProbeLimit || isGetLine(buf))
			if need <= len(buf) && !waitingLine {
				t.Fatalf("input %q: stuck on %q (need %d)", in, buf, need)
			}
		}
		if closed || p.Dialect() == DialectBinary {
			return // where an overlong line closes depends on chunking
		}
		size := int(chunk%16) + 1
		got, left, err := stream(fuzzParser(chunk), in, func() int { return size })
		if err != "" {
			t.Fatalf("input %q in chunks of %d: %s", in, size, err)
		}
		if len(got) > 0 && strings.HasPrefix(got[len(got)-1], eClose) {
			return // chunks made a line look overlong, as they would for memcached
		}
		if !slices.Equal(got, whole) || left != len(buf) {
			t.Fatalf("input %s in chunks of %d:\n got %s (left %d)\nwant %s (left %d)", quoteShort(string(in)), size, quoteAll(got), left, quoteAll(whole), len(buf))
		}
	})
}
