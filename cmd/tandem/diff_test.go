package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol"
	"github.com/tandemcache/tandem/protocol/transcript"
)

// casField matches the CAS unique of a gets/gats VALUE line: CAS ids differ
// between servers by design, so they are masked before comparison.
var casField = regexp.MustCompile(`(?m)^(VALUE \S+ \d+ \d+) \d+\r$`)

func maskCAS(s string) string { return casField.ReplaceAllString(s, "$1 <cas>\r") }

// diffCases are classic-protocol exchanges whose replies must match
// memcached 1.6.18 byte for byte. They run in order on one server pair; each
// uses its own keys. Where tandem answers as newer memcached does
// (transcript.Differences: a line shorter than four bytes, a storage line
// with too few tokens, too few or extra tokens on any classic command,
// strict numbers, the command name), the cases are replayed by
// TestTranscripts instead;
// here, data lines read as commands are at least two bytes long, which every
// version answers ERROR. A case whose newer field names a difference gets
// the request memcached 1.6.18 must receive to answer as tandem does
// (as1618).
var diffCases = []struct{ name, req, newer string }{
	{"unknown command", "foo bar\r\n", ""},
	{"set get", "set d1 5 0 3\r\nabc\r\nget d1\r\n", ""},
	{"get many keys with misses", "set d2a 0 0 1\r\na\r\nget d2a d2b d2a d2c\r\n", ""},
	{"flags max", "set d3 4294967295 0 1\r\nx\r\nget d3\r\n", ""},
	{"flags overflow", "set d4 4294967296 0 2\r\nxx\r\nget d4\r\n", ""},
	{"flags negative", "set d5 -1 0 2\r\nxx\r\n", swallowRejected},
	{"length negative", "set d6 0 0 -1\r\nxx\r\n", ""},
	{"length non-numeric", "set d7 0 0 abc\r\nxx\r\n", ""},
	{"exptime non-numeric", "set d8 0 abc 2\r\nxx\r\n", swallowRejected},
	{"key 250", "set " + strings.Repeat("k", 250) + " 0 0 1\r\nx\r\nget " + strings.Repeat("k", 250) + "\r\n", ""},
	{"key 251", "set " + strings.Repeat("k", 251) + " 0 0 2\r\nxx\r\n", swallowRejected},
	{"get key 251", "get " + strings.Repeat("k", 251) + "\r\n", ""},
	{"data longer than declared", "set d9 0 0 3\r\nabcdefg\r\nget d9\r\n", ""},
	{"data shorter than declared", "set d10 0 0 8\r\nabc\r\nget d10\r\n", ""},
	{"bare newline", "set d12 0 0 2\nab\r\nget d12\n", ""},
	{"add existing and new", "set d13 0 0 1\r\na\r\nadd d13 0 0 1\r\nb\r\nadd d13n 0 0 1\r\nc\r\nget d13 d13n\r\n", ""},
	{"replace", "replace d14 0 0 1\r\na\r\nset d14 0 0 1\r\nb\r\nreplace d14 3 0 1\r\nc\r\nget d14\r\n", ""},
	{"append prepend keep flags", "set d15 7 0 2\r\nbb\r\nappend d15 0 0 2\r\ncc\r\nprepend d15 0 0 2\r\naa\r\nget d15\r\nappend d15x 0 0 1\r\nx\r\n", ""},
	{"cas missing and bad", "cas d16 0 0 1 12345\r\nx\r\ncas d16 0 0 2 abc\r\nxx\r\nget d16\r\n", swallowRejected},
	{"gets masked", "set d17 1 0 1\r\nx\r\ngets d17\r\n", ""},
	{"incr decr", "set d18 0 0 2\r\n10\r\nincr d18 5\r\ndecr d18 100\r\nincr d18 18446744073709551615\r\nget d18\r\n", ""},
	{"incr wraps", "set d19 0 0 20\r\n18446744073709551615\r\nincr d19 2\r\nget d19\r\n", ""},
	{"decr shrinks length", "set d20 0 0 3\r\n100\r\ndecr d20 1\r\nget d20\r\n", ""},
	{"incr non-numeric", "set d21 0 0 3\r\nabc\r\nincr d21 1\r\n", ""},
	{"incr bad delta", "set d22 0 0 1\r\n1\r\nincr d22 abc\r\nincr d22 -1\r\n", ""},
	{"incr missing", "incr d23 1\r\ndecr d23 1\r\n", ""},
	{"delete forms", "set d24 0 0 1\r\nx\r\ndelete d24 0\r\ndelete d24\r\ndelete d24 1\r\ndelete d24 noreply\r\ndelete d24 0 noreply\r\n", ""},
	{"touch", "set d25 0 0 1\r\nx\r\ntouch d25 100\r\ntouch d25x 100\r\ntouch d25 abc\r\n", ""},
	{"gat gats", "set d26 2 0 1\r\nx\r\ngat 100 d26 d26x\r\ngats 100 d26\r\ngat abc d26\r\n", ""},
	{"verbosity", "verbosity 1\r\nverbosity 1 noreply\r\n", ""},
	{"noreply storage", "set d27 0 0 1 noreply\r\na\r\nadd d27 0 0 1 noreply\r\nb\r\nget d27\r\n", ""},
	{"noreply on errors", "incr d28 1 noreply\r\nset d28 0 0 3 noreply\r\nabcdefg\r\nget d28\r\n", ""},
	{"too large swallowed", "set d29 0 0 2000000\r\n" + strings.Repeat("z", 2000000) + "\r\nget d29\r\n", ""},
	{"too large unlinks old", "set d30 0 0 1\r\nx\r\nset d30 0 0 2000000\r\n" + strings.Repeat("z", 2000000) + "\r\nget d30\r\n", ""},
	{"binary garbage", "\x01\x02\x03\xff\xfe\r\n", ""},
	{"control char in key", "set d31\x01 0 0 2\r\nxx\r\nget d31\x01\r\n", ""},
	{"tab separated", "set\td32\t0\t0\t2\r\nxx\r\n", ""},
	{"flush_all bad delay", "flush_all abc\r\nflush_all -1\r\n", ""},
	{"flush_all noreply", "set d33 0 0 1\r\nx\r\nflush_all noreply\r\nget d33\r\n", ""},
	{"flush_all", "set d34 0 0 1\r\nx\r\nflush_all\r\nget d34\r\n", ""},
}

// swallowRejected names the difference (transcript.Differences) of a
// storage line refused after its length parsed: tandem swallows its data
// block as memcached 1.6.45 does, 1.6.18 reads it as commands.
const swallowRejected = "swallow rejected data"

// as1618 returns req as memcached 1.6.18 must receive it to answer as tandem
// does, given the difference newer names (none: req itself). For
// swallowRejected it drops the data blocks tandem's parser swallows after
// refusing a storage line (not those of a value too large, which every
// version swallows).
func as1618(t *testing.T, req, newer string) string {
	t.Helper()
	if newer == "" {
		return req
	}
	if _, ok := transcript.Lookup(newer); !ok || newer != swallowRejected {
		t.Fatalf("as1618: %q is not a difference it knows (transcript.Differences)", newer)
	}
	p := protocol.NewParser(1 << 20)
	p.SetItemSizeMax(1<<20, true)
	var out []byte
	buf := []byte(req)
	refused := false
	for len(buf) > 0 {
		var r protocol.Request
		n := p.Next(buf, &r)
		if n == 0 {
			t.Fatalf("as1618: %q is incomplete", req)
		}
		if !(refused && r.Cmd == protocol.CmdNone) {
			out = append(out, buf[:n]...)
		}
		refused = r.Cmd == protocol.CmdError && r.Err.Kind != protocol.ErrTooLarge
		buf = buf[n:]
	}
	if string(out) == req {
		t.Fatalf("as1618: %q swallows no data block: its case needs no %q", req, newer)
	}
	return string(out)
}

// TestDifferentialText compares tandem (every mode) with the real memcached.
func TestDifferentialText(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		mc := testenv.StartMemcached(t) // one per mode: the cases share state in order
		s := startServer(t, mode, "-m", "256")
		for _, tc := range diffCases {
			want, wantClosed, err := exchange(mc.Addr, as1618(t, tc.req, tc.newer))
			if err != nil {
				t.Fatalf("%s: memcached: %v", tc.name, err)
			}
			got, gotClosed, err := exchange(s.Addr, tc.req)
			if err != nil {
				t.Fatalf("%s: tandem: %v", tc.name, err)
			}
			if maskCAS(got) != maskCAS(want) || gotClosed != wantClosed {
				t.Errorf("%s: request %s\n tandem    %s (closed=%v)\n memcached %s (closed=%v)",
					tc.name, quote(tc.req), quote(got), gotClosed, quote(want), wantClosed)
			}
		}
	})
}
