package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strings"

	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol/transcript"
)

// The bad-input catalogue: hostile and malformed requests, each with the
// exact reply memcached 1.6.18 gives and what becomes of the connection. Every
// case runs on a fresh connection against every tandem mode and, in the same
// test, against the real memcached, which must give the recorded reply too
// (so the catalogue cannot drift from the reference). Cases where memcached
// is not deterministic, or where tandem deliberately differs, carry an
// exception that says why; they are checked against tandem only.
//
// Cases are grouped by dialect: textBadInput (the classic protocol, fully),
// metaBadInput and binaryBadInput. Each dialect must answer a probe first
// (see probeDialect); a server that does not fails the test. Binary cases
// use a binary noop as their sentinel and are compared with CAS fields
// masked.

var recordCatalogue = flag.Bool("tandem.catalogue.record", false,
	"print memcached's replies to the bad-input catalogue instead of checking them")

// badInput is one catalogue case.
type badInput struct {
	name    string
	dialect string // "text", "meta" or "binary"
	// segments are the request bytes (one segment for most cases); each
	// reaches the server as a read of its own (see converse).
	segments []string
	// await[i], when set, is the reply that must have arrived before
	// segment i+1 is written (its length is awaited; the comparison is at
	// the end): for cases where memcached's reply depends on what it had
	// sent before a later segment arrived.
	await []string
	style writeStyle
	// want is the exact reply; state what the connection does after it.
	want  string
	state streamState
	// exception, when set, says why memcached is not held to want (tandem
	// still is). With mcDiffers, memcached must give mcWant and mcState
	// instead, which documents the difference and notices if it goes away;
	// without it memcached is not run on the case.
	exception string
	mcDiffers bool
	mcWant    string
	mcState   streamState
	// newer, when set, names the difference from memcached 1.6.18 (an entry
	// of transcript.Differences) that makes tandem, answering as the newest
	// memcached, send want: memcached 1.6.18 must send mcWant instead, with
	// the same state.
	newer string
	// robust cases check only that the server answers or closes without
	// hanging and stays healthy (the reply is not specified).
	robust bool
}

func req(s ...string) []string { return s }

// Large inputs, built once.
var (
	key250      = strings.Repeat("k", 250)
	key251      = strings.Repeat("k", 251)
	value2M     = strings.Repeat("z", 2_000_000)
	line1M      = strings.Repeat("x", 1<<20)
	get10kKeys  = manyKeys("bi:g10k:", 10_000)
	getLine1M   = "get " + strings.TrimSpace(strings.Repeat(strings.Repeat("m", 249)+" ", (1<<20)/250))
	getLine5M   = "get " + strings.TrimSpace(strings.Repeat(strings.Repeat("m", 249)+" ", (5<<20)/250))
	allBytes    = allByteLines()
	garbage     = garbageLines(7, 200)
	get10kReply = "VALUE bi:g10k:17 0 1\r\na\r\nVALUE bi:g10k:9999 0 1\r\nb\r\nEND\r\n"
)

func manyKeys(prefix string, n int) string {
	var sb strings.Builder
	sb.WriteString("get")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, " %s%d", prefix, i)
	}
	return sb.String()
}

// allByteLines is every byte value 0..255 as a one-byte line. The first byte
// of the connection is 0x00, so the connection speaks text.
func allByteLines() string {
	var sb strings.Builder
	for b := 0; b < 256; b++ {
		sb.WriteByte(byte(b))
		sb.WriteString("\r\n")
	}
	return sb.String()
}

// garbageLines is n seeded random lines of binary garbage, 2 to 81 bytes
// each (a shorter line is a difference from 1.6.18, see
// transcript.Differences), every one starting with a byte >= 0x81 so that no line can begin a
// command (and the connection's first byte is not the binary magic 0x80).
func garbageLines(seed int64, n int) string {
	rng := rand.New(rand.NewSource(seed))
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteByte(byte(0x81 + rng.Intn(0x7f)))
		for j := 1 + rng.Intn(80); j > 0; j-- {
			c := byte(rng.Intn(256))
			if c == '\n' {
				c = '?'
			}
			sb.WriteByte(c)
		}
		sb.WriteString("\r\n")
	}
	return sb.String()
}

// textBadInput is the classic text protocol's catalogue.
var textBadInput = []badInput{
	// Unknown and empty.
	{name: "unknown command", segments: req("foo bar\r\n"), want: "ERROR\r\n"},
	{name: "unknown command with noreply", segments: req("foo noreply\r\n"), want: "", newer: "command name", mcWant: "ERROR\r\n"},
	{name: "empty line", segments: req("\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "ERROR\r\n"},
	{name: "empty lines lf and cr", segments: req("\n\r\r\n \r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "ERROR\r\nERROR\r\nERROR\r\n"},
	{name: "get without key", segments: req("get\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "too few tokens", mcWant: "ERROR\r\n"},
	{name: "get with only spaces", segments: req("get    \r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "too few tokens", mcWant: "ERROR\r\n"},
	{name: "missing tokens on set", segments: req("set bi:mt 0 0\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "short storage line", mcWant: "ERROR\r\n"},
	{name: "incr without delta", segments: req("incr bi:nd\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "too few tokens", mcWant: "ERROR\r\n"},
	{name: "touch without exptime", segments: req("touch bi:te\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "too few tokens", mcWant: "ERROR\r\n"},

	// Keys.
	{name: "key of 250 bytes", segments: req("set " + key250 + " 0 0 1\r\nx\r\nget " + key250 + "\r\n"),
		want: "STORED\r\nVALUE " + key250 + " 0 1\r\nx\r\nEND\r\n"},
	{name: "set key of 251 bytes", segments: req("set " + key251 + " 0 0 1\r\nx\r\n"),
		want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "get key of 251 bytes", segments: req("get " + key251 + "\r\n"),
		want: "CLIENT_ERROR bad command line format\r\n"},
	// memcached drops the VALUEs already produced by a get that fails on
	// a later key (and every reply still queued on the connection, hence
	// the wait for the set's reply).
	{name: "get key of 251 bytes after a good key", segments: req("set bi:k251a 0 0 1\r\na\r\n", "get bi:k251a "+key251+"\r\n"),
		await: req("STORED\r\n"),
		want:  "STORED\r\nCLIENT_ERROR bad command line format\r\n"},
	{name: "delete key of 251 bytes", segments: req("delete " + key251 + "\r\n"),
		want: "CLIENT_ERROR bad command line format\r\n"},
	{name: "incr key of 251 bytes", segments: req("incr " + key251 + " 1\r\n"),
		want: "CLIENT_ERROR bad command line format\r\n"},
	{name: "key with control characters", segments: req("set bi:c\x01\x7f\x1b 0 0 1\r\nx\r\nget bi:c\x01\x7f\x1b\r\n"),
		want: "STORED\r\nVALUE bi:c\x01\x7f\x1b 0 1\r\nx\r\nEND\r\n"},
	{name: "key with a tab is one token", segments: req("set bi:t\tab 0 0 1\r\nx\r\nget bi:t\tab\r\nget bi:t\r\n"),
		want: "STORED\r\nVALUE bi:t\tab 0 1\r\nx\r\nEND\r\nEND\r\n"},
	{name: "key with high bytes", segments: req("set bi:\xff\xfe\xc3\xa9 0 0 1\r\nx\r\nget bi:\xff\xfe\xc3\xa9\r\n"),
		want: "STORED\r\nVALUE bi:\xff\xfe\xc3\xa9 0 1\r\nx\r\nEND\r\n"},
	{name: "nul byte is part of the key", segments: req("set bi:nul 0 0 1\r\nx\r\nget bi:nul\x00bi:other\r\n"),
		want: "STORED\r\nEND\r\n", newer: "command name", mcWant: "STORED\r\nVALUE bi:nul 0 1\r\nx\r\nEND\r\n"},

	// Lengths.
	{name: "negative length", segments: req("set bi:l1 0 0 -1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "non-numeric length", segments: req("set bi:l2 0 0 abc\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "overflowing length", segments: req("set bi:l3 0 0 99999999999999999999\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "length just under INT_MAX swallows", segments: req("set bi:l4 0 0 2147483645\r\nx\r\n"),
		want: "SERVER_ERROR object too large for cache\r\n", state: swallowed,
		exception: "memcached holds the reply back until it has swallowed the 2 GiB; tandem sends it at once",
		mcDiffers: true, mcWant: "", mcState: swallowed},
	{name: "length INT_MAX", segments: req("set bi:l5 0 0 2147483647\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "length with trailing garbage", segments: req("set bi:l6 0 0 1x\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "length above -I swallowed, stream in sync", segments: req("set bi:big 0 0 2000000\r\n" + value2M + "\r\nget bi:big\r\n"),
		want: "SERVER_ERROR object too large for cache\r\nEND\r\n"},
	{name: "length above -I unlinks the old value", segments: req("set bi:big2 0 0 1\r\nx\r\nset bi:big2 0 0 2000000\r\n" + value2M + "\r\nget bi:big2\r\n"),
		want: "STORED\r\nSERVER_ERROR object too large for cache\r\nEND\r\n"},
	{name: "length above -I with the data in pieces", segments: req("set bi:big3 0 0 2000000\r\n"+value2M[:1000], value2M[1000:]+"\r\nget bi:big3\r\n"),
		want: "SERVER_ERROR object too large for cache\r\nEND\r\n"},

	// Flags.
	{name: "negative flags", segments: req("set bi:f1 -1 0 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "non-numeric flags", segments: req("set bi:f2 abc 0 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	// memcached 1.6.18 reads flags with strtoul into 32 bits: they wrap.
	{name: "flags 2^32 wrap", segments: req("set bi:f3 4294967296 0 1\r\nx\r\nget bi:f3\r\n"), want: "STORED\r\nVALUE bi:f3 0 1\r\nx\r\nEND\r\n"},
	{name: "flags 2^33+7 wrap", segments: req("set bi:f6 8589934599 0 1\r\nx\r\nget bi:f6\r\n"), want: "STORED\r\nVALUE bi:f6 7 1\r\nx\r\nEND\r\n"},
	{name: "flags 2^32-1", segments: req("set bi:f4 4294967295 0 1\r\nx\r\nget bi:f4\r\n"), want: "STORED\r\nVALUE bi:f4 4294967295 1\r\nx\r\nEND\r\n"},
	{name: "overflowing flags", segments: req("set bi:f5 99999999999999999999 0 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},

	// Exptimes.
	{name: "non-numeric exptime", segments: req("set bi:e1 0 abc 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "overflowing exptime", segments: req("set bi:e2 0 99999999999999999999 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "negative exptime expires at once", segments: req("set bi:e3 0 -1 1\r\nx\r\nget bi:e3\r\n"), want: "STORED\r\nEND\r\n"},
	{name: "touch non-numeric exptime", segments: req("touch bi:e4 abc\r\n"), want: "CLIENT_ERROR invalid exptime argument\r\n"},
	{name: "gat non-numeric exptime", segments: req("gat abc bi:e5\r\n"), want: "CLIENT_ERROR invalid exptime argument\r\n"},
	{name: "flush_all non-numeric delay", segments: req("flush_all abc\r\n"), want: "CLIENT_ERROR invalid exptime argument\r\n"},

	// Deltas and arithmetic.
	{name: "non-numeric delta", segments: req("incr bi:d1 abc\r\n"), want: "CLIENT_ERROR invalid numeric delta argument\r\n"},
	{name: "negative delta", segments: req("incr bi:d2 -1\r\n"), want: "CLIENT_ERROR invalid numeric delta argument\r\n"},
	{name: "overflowing delta", segments: req("incr bi:d3 18446744073709551616\r\n"), want: "CLIENT_ERROR invalid numeric delta argument\r\n"},
	{name: "incr on non-numeric value", segments: req("set bi:d4 0 0 3\r\nabc\r\nincr bi:d4 1\r\ndecr bi:d4 1\r\n"),
		want: "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{name: "incr at 2^64-1 wraps", segments: req("set bi:d5 0 0 20\r\n18446744073709551615\r\nincr bi:d5 1\r\nget bi:d5\r\n"),
		want: "STORED\r\n0\r\nVALUE bi:d5 0 20\r\n0                   \r\nEND\r\n"},
	{name: "incr by 2^64-1", segments: req("set bi:d6 0 0 1\r\n2\r\nincr bi:d6 18446744073709551615\r\n"), want: "STORED\r\n1\r\n"},
	{name: "decr below 0 stops at 0", segments: req("set bi:d7 0 0 2\r\n10\r\ndecr bi:d7 11\r\nget bi:d7\r\n"),
		want: "STORED\r\n0\r\nVALUE bi:d7 0 2\r\n0 \r\nEND\r\n"},
	{name: "incr on value over 2^64", segments: req("set bi:d8 0 0 20\r\n18446744073709551616\r\nincr bi:d8 1\r\n"),
		want: "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{name: "incr on empty value", segments: req("set bi:d9 0 0 0\r\n\r\nincr bi:d9 1\r\n"),
		want: "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
	{name: "decr shrinking a counter after a pipelined get", segments: req("set bi:d11 0 0 3\r\n007\r\nget bi:d11\r\ndecr bi:d11 1\r\nget bi:d11\r\n"),
		want: "STORED\r\nVALUE bi:d11 0 3\r\n007\r\nEND\r\n6\r\nVALUE bi:d11 0 3\r\n6  \r\nEND\r\n"},
	{name: "incr on missing key", segments: req("incr bi:d10 1\r\ndecr bi:d10 1\r\n"), want: "NOT_FOUND\r\nNOT_FOUND\r\n"},

	// CAS.
	{name: "cas non-numeric unique", segments: req("cas bi:c1 0 0 1 abc\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "cas negative unique", segments: req("cas bi:c2 0 0 1 -1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "cas overflowing unique", segments: req("cas bi:c3 0 0 1 18446744073709551616\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "swallow rejected data", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
	{name: "cas without unique", segments: req("cas bi:c4 0 0 1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "short storage line", mcWant: "ERROR\r\nERROR\r\n"},

	// Data blocks.
	{name: "data shorter than declared waits for the rest", segments: req("set bi:s1 0 0 10\r\nabc\r\n", "defgh\r\nget bi:s1\r\n"),
		want: "STORED\r\nVALUE bi:s1 0 10\r\nabc\r\ndefgh\r\nEND\r\n"},
	{name: "data shorter than declared then a command", segments: req("set bi:s2 0 0 6\r\nabc\r\nget bi:s2\r\n"),
		want: "CLIENT_ERROR bad data chunk\r\nERROR\r\n"},
	{name: "data longer than declared", segments: req("set bi:s3 0 0 3\r\nabcdef\r\nget bi:s3\r\n"),
		want: "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\nEND\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad data chunk\r\nERROR\r\nEND\r\n"},
	{name: "data ending in bare lf", segments: req("set bi:s4 0 0 2\r\nab\nget bi:s4\r\n"),
		want: "CLIENT_ERROR bad data chunk\r\nERROR\r\n"},
	{name: "bare lf line endings", segments: req("set bi:s5 0 0 2\nab\r\nget bi:s5\nincr bi:s5 1\ndelete bi:s5\n"),
		want: "STORED\r\nVALUE bi:s5 0 2\r\nab\r\nEND\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nDELETED\r\n"},

	// Garbage.
	{name: "every byte value as a line", segments: req(allBytes), want: strings.Repeat("CLIENT_ERROR bad command line format\r\n", 257),
		newer: "short line", mcWant: strings.Repeat("ERROR\r\n", 257)},
	{name: "random binary garbage lines", segments: req(garbage), want: strings.Repeat("ERROR\r\n", 200)},
	{name: "1 MiB line without newline closes", segments: req(line1M), want: "", state: closedConn},
	{name: "20 KiB line with newline closes", segments: req(strings.Repeat("x", 20<<10) + "\r\n"), want: "", state: closedConn},
	{name: "10 KiB line with newline", segments: req(strings.Repeat("x", 10<<10) + "\r\n"), want: "ERROR\r\n"},
	{name: "1 MiB get line", segments: req(getLine1M + "\r\n"), want: "END\r\n"},
	{name: "5 MiB get line closes", segments: req(getLine5M + "\r\n"), want: "", state: closedConn,
		exception: "memcached grows its read buffer without limit for a multiget line; tandem closes a get line over 4 MiB (protocol.DefaultMaxGetLine) to bound per-connection memory",
		mcDiffers: true, mcWant: "END\r\n", mcState: inSync},

	// Tokens.
	{name: "too many tokens on set", segments: req("set bi:t1 0 0 1 noreply extra\r\nx\r\n"), want: "STORED\r\n", newer: "extra tokens", mcWant: "ERROR\r\nERROR\r\n"},
	{name: "too many tokens on incr", segments: req("incr bi:t2 1 noreply extra\r\n"), want: "NOT_FOUND\r\n", newer: "extra tokens", mcWant: "ERROR\r\n"},
	{name: "too many tokens on delete", segments: req("delete bi:t3 0 noreply extra\r\n"), want: "ERROR\r\n"},
	{name: "delete with a time", segments: req("delete bi:t4 5\r\n"),
		want: "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"},
	{name: "get with 30 keys", segments: req("set bi:t5 0 0 1\r\nv\r\nget" + strings.Repeat(" bi:t5x", 28) + " bi:t5\r\n"),
		want: "STORED\r\nVALUE bi:t5 0 1\r\nv\r\nEND\r\n"},
	{name: "get with 10,000 keys", segments: req("set bi:g10k:17 0 0 1\r\na\r\nset bi:g10k:9999 0 0 1\r\nb\r\n" + get10kKeys + "\r\n"),
		want: "STORED\r\nSTORED\r\n" + get10kReply},

	// noreply on the error paths.
	{name: "noreply: key too long", segments: req("set " + key251 + " 0 0 1 noreply\r\nx\r\n"), want: "", newer: "swallow rejected data", mcWant: "ERROR\r\n"},
	{name: "noreply: negative length", segments: req("set bi:n1 0 0 -1 noreply\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "strict numbers", mcWant: "ERROR\r\n"},
	{name: "noreply: bad flags", segments: req("set bi:n2 abc 0 1 noreply\r\nx\r\n"), want: "", newer: "swallow rejected data", mcWant: "ERROR\r\n"},
	{name: "noreply: too large", segments: req("set bi:n3 0 0 2000000 noreply\r\n" + value2M + "\r\nget bi:n3\r\n"), want: "END\r\n"},
	{name: "noreply: bad data chunk", segments: req("set bi:n4 0 0 3 noreply\r\nabcd\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "ERROR\r\n"},
	{name: "noreply: non-numeric delta", segments: req("incr bi:n5 abc noreply\r\n"), want: ""},
	{name: "noreply: incr on non-numeric value", segments: req("set bi:n6 0 0 1 noreply\r\nx\r\nincr bi:n6 1 noreply\r\n"), want: ""},
	{name: "noreply: incr missing", segments: req("incr bi:n7 1 noreply\r\n"), want: ""},
	{name: "noreply: delete with a time", segments: req("delete bi:n8 5 noreply\r\n"), want: ""},
	{name: "noreply: touch bad exptime", segments: req("touch bi:n9 abc noreply\r\n"), want: ""},
	{name: "noreply: cas bad unique", segments: req("cas bi:n10 0 0 1 abc noreply\r\nx\r\n"), want: "", newer: "swallow rejected data", mcWant: "ERROR\r\n"},
	{name: "noreply: cas missing", segments: req("cas bi:n11 0 0 1 1 noreply\r\nx\r\n"), want: ""},
	{name: "noreply: add existing", segments: req("set bi:n12 0 0 1 noreply\r\nx\r\nadd bi:n12 0 0 1 noreply\r\ny\r\nget bi:n12\r\n"),
		want: "VALUE bi:n12 0 1\r\nx\r\nEND\r\n"},
	{name: "noreply: flush_all bad delay", segments: req("flush_all abc noreply\r\n"), want: ""},

	// Split writes.
	{name: "request split across tiny writes", style: writeTiny,
		segments: req("set bi:w1 3 0 5\r\nhello\r\nappend bi:w1 0 0 1\r\n!\r\nget bi:w1 bi:w2\r\nset bi:w2 0 0 2\r\n10\r\nincr bi:w2 5\r\ndelete bi:w1\r\nget bi:w1\r\nfoo\r\n"),
		want:     "STORED\r\nSTORED\r\nVALUE bi:w1 3 6\r\nhello!\r\nEND\r\nSTORED\r\n15\r\nDELETED\r\nEND\r\nERROR\r\n"},
	{name: "bad input split across tiny writes", style: writeTiny,
		segments: req("set bi:w3 0 0 -1\r\nx\r\nset bi:w3 0 0 3\r\nabcdef\r\nincr bi:w3 abc\r\n" + key251 + "\r\nget bi:w3\r\n"),
		want:     "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR invalid numeric delta argument\r\nERROR\r\nEND\r\n",
		newer:    "short line",
		mcWant:   "CLIENT_ERROR bad command line format\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\nERROR\r\nCLIENT_ERROR invalid numeric delta argument\r\nERROR\r\nEND\r\n"},

	// Formerly a known tandem bug, fixed: the keys before the bad one are
	// looked up (and touched) like memcached does.
	{name: "gat touches the keys before a too-long key", segments: req("set bi:kb1 0 0 1\r\na\r\n", "gat -1 bi:kb1 "+key251+"\r\n", "get bi:kb1\r\n"),
		await: req("STORED\r\n", "STORED\r\nCLIENT_ERROR bad command line format\r\n"),
		want:  "STORED\r\nCLIENT_ERROR bad command line format\r\nEND\r\n"},

	// Documented differences: memcached artefacts tandem does not copy.
	{name: "get with a too-long key pipelined after a set", segments: req("set bi:x1 0 0 1\r\na\r\nget bi:x1 " + key251 + "\r\n"),
		want:      "STORED\r\nCLIENT_ERROR bad command line format\r\n",
		exception: "a get failing on a too-long key makes memcached drop every reply still queued on the connection, including those of earlier pipelined commands; tandem drops only the get's own VALUEs",
		mcDiffers: true, mcWant: "CLIENT_ERROR bad command line format\r\n"},
	{name: "bad storage line then an overlong data line", segments: req("set bi:x2 abc 0 1\r\n" + strings.Repeat("d", 20<<10) + "\r\n"),
		want: "CLIENT_ERROR bad command line format\r\n", state: closedConn,
		exception: "memcached closes on the overlong line before sending the reply it had queued for the bad storage line; tandem sends it, then closes",
		mcDiffers: true, mcWant: "", mcState: closedConn},
	{name: "incr of a counter over 2^63 in a reused slab chunk", segments: req("set bi:x4 0 0 28\r\n" + strings.Repeat("-", 28) + "\r\ndelete bi:x4\r\nset bi:x4 0 0 20\r\n18446744073709551615\r\nincr bi:x4 1\r\n"),
		want:      "STORED\r\nDELETED\r\nSTORED\r\n0\r\n",
		exception: "memcached 1.6.18's safe_strtoull looks for a '-' with strchr past the end of the item's data, into stale slab memory, and calls such counters non-numeric; found by TestDiffFuzz",
		mcDiffers: true, mcWant: "STORED\r\nDELETED\r\nSTORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},

	// Volume.
	{name: "10,000 pipelined unknown commands", segments: req(strings.Repeat("foo\r\n", 10_000)), want: strings.Repeat("ERROR\r\n", 10_000)},
	{name: "quit closes", segments: req("get bi:q\r\nquit\r\nget bi:q\r\n"), want: "END\r\n", state: closedConn},
}

// metaBadInput and binaryBadInput hold the meta and binary protocol cases.
var (
	metaBadInput = []badInput{
		{name: "meta: mg without key", segments: req("mg\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "meta without key", mcWant: "ERROR\r\n"},
		{name: "meta: mg key of 251 bytes", segments: req("mg " + key251 + " v\r\n"), want: "CLIENT_ERROR bad command line format\r\n"},
		{name: "meta: mg unknown flag", segments: req("mg mt:a a\r\n"), want: "CLIENT_ERROR invalid flag\r\n"},
		{name: "meta: mg flag that is no letter", segments: req("mg mt:a !\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "meta flag byte", mcWant: "CLIENT_ERROR invalid flag\r\n"},
		{name: "meta: mg duplicate flag", segments: req("ms mt:b 1\r\nx\r\nmg mt:b v v\r\n"), want: "HD\r\nCLIENT_ERROR duplicate flag\r\n"},
		{name: "meta: mg bad base64 key", segments: req("mg !!!! b v\r\n"), want: "CLIENT_ERROR error decoding key\r\n"},
		{name: "meta: mg opaque too long", segments: req("mg mt:c O" + strings.Repeat("o", 40) + "\r\n"), want: "CLIENT_ERROR opaque token too long\r\n"},
		{name: "meta: mg with 30 flags", segments: req("mg mt:d" + strings.Repeat(" v", 30) + "\r\n"), want: "CLIENT_ERROR options flags are too long\r\n"},
		{name: "meta: mg miss with q then mn", segments: req("mg mt:e v q\r\nmn\r\n"), want: "MN\r\n"},
		{name: "meta: ms without length", segments: req("ms mt:f\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
		{name: "meta: ms negative length", segments: req("ms mt:g -1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
		{name: "meta: ms non-numeric length", segments: req("ms mt:h abc\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
		{name: "meta: ms data longer than declared", segments: req("ms mt:i 3\r\nabcdef\r\nmg mt:i v\r\n"), want: "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\nEN\r\n", newer: "short line", mcWant: "CLIENT_ERROR bad data chunk\r\nERROR\r\nEN\r\n"},
		{name: "meta: ms data shorter than declared", segments: req("ms mt:j 6\r\nabc\r\nmg mt:j v\r\n"), want: "CLIENT_ERROR bad data chunk\r\nERROR\r\n"},
		{name: "meta: ms too large swallowed", segments: req("ms mt:k 2000000\r\n" + value2M + "\r\nmg mt:k v\r\n"), want: "SERVER_ERROR object too large for cache\r\nEN\r\n"},
		{name: "meta: ms unknown mode", segments: req("ms mt:l 1 MZ\r\nx\r\n"), want: "CLIENT_ERROR invalid mode for ms M token\r\n"},
		{name: "meta: ms bad TTL", segments: req("ms mt:m 1 Tabc\r\nx\r\n"), want: "CLIENT_ERROR bad token in command line format\r\n"},
		{name: "meta: ms bad flags", segments: req("ms mt:n 1 F-1\r\nx\r\n"), want: "CLIENT_ERROR bad command line format\r\n"},
		{name: "meta: ms bad cas", segments: req("ms mt:o 1 Cabc\r\nx\r\n"), want: "CLIENT_ERROR bad token in command line format\r\n"},
		{name: "meta: ma on non-numeric value", segments: req("ms mt:p 1\r\nx\r\nma mt:p\r\n"), want: "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{name: "meta: ma bad delta", segments: req("ma mt:q Dabc\r\n"), want: "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{name: "meta: ma delta overflow", segments: req("ma mt:r D18446744073709551616\r\n"), want: "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{name: "meta: ma incr wraps", segments: req("ms mt:s 1\r\n2\r\nma mt:s v D18446744073709551615\r\n"), want: "HD\r\nVA 1\r\n1\r\n"},
		{name: "meta: ma decr below 0", segments: req("ms mt:t 1\r\n5\r\nma mt:t MD D10 v\r\n"), want: "HD\r\nVA 1\r\n0\r\n"},
		{name: "meta: ma missing", segments: req("ma mt:u\r\nma mt:u q\r\nmn\r\n"), want: "NF\r\nNF\r\nMN\r\n"},
		{name: "meta: md bad flag", segments: req("md mt:v a\r\n"), want: "CLIENT_ERROR invalid flag\r\n", newer: "md flag errors", mcWant: "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{name: "meta: md flag that is no letter", segments: req("md mt:v !\r\n"), want: "CLIENT_ERROR bad command line format\r\n", newer: "meta flag byte", mcWant: "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{name: "meta: md key of 251 bytes", segments: req("md " + key251 + "\r\n"), want: "CLIENT_ERROR bad command line format\r\n"},
		{name: "meta: me without key", segments: req("me\r\n"), want: "CLIENT_ERROR bad command line format\r\n"},
		{name: "meta: mn with arguments", segments: req("mn foo bar\r\n"), want: "MN\r\n"},
		{name: "meta: split across tiny writes", style: writeTiny,
			segments: req("ms mt:w 5 T0 F3\r\nhello\r\nmg mt:w v f\r\nma mt:w\r\nmd mt:w q\r\nmg mt:w v\r\nmn\r\n"), want: "HD\r\nVA 5 f3\r\nhello\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nEN\r\nMN\r\n"},
	}
	binaryBadInput = []badInput{
		{name: "binary magic then garbage", segments: req("\x80" + strings.Repeat("\xff", 23) + "\r\n"), robust: true, state: swallowed,
			exception: "memcached waits for the 4 GiB body the header declares; tandem must answer, wait or close without harm"},
		{name: "binary: magic then 64 KiB of garbage", segments: req("\x80" + garbageLines(11, 1500)), robust: true, state: swallowed,
			exception: "garbage headers declare arbitrary bodies; tandem must answer, wait or close without harm"},
		{name: "binary: get miss", segments: req(bin(0x00, "bn:a", "", "")), want: "\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\t\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Not found"},
		{name: "binary: get key of 251 bytes", segments: req(bin(0x00, key251, "", "")), want: "\x81\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x11\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Invalid arguments", state: closedConn},
		{name: "binary: set and get", segments: req(bin(0x01, "bn:b", setExtras(5, 0), "hello") + bin(0x00, "bn:b", "", "")), want: "\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00-\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\t\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00-\x00\x00\x00\x05hello"},
		{name: "binary: set without extras", segments: req(bin(0x01, "bn:c", "", "x")), want: "\x81\x01\x00\x00\x00\x00\x00\x04\x00\x00\x00\x11\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Invalid arguments", state: closedConn},
		{name: "binary: set too large swallowed", segments: req(bin(0x01, "bn:d", setExtras(0, 0), value2M) + bin(0x00, "bn:d", "", "")), want: "\x81\x01\x00\x00\x00\x00\x00\x03\x00\x00\x00\n\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Too large.\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\t\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Not found"},
		{name: "binary: body shorter than the key", segments: req(binRaw(0x80, 0x00, 10, 0, 4, "bn:e")), want: "\x81\x00\x00\x00\x00\x00\x00\x81\x00\x00\x00\x0f\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Unknown command", state: closedConn},
		{name: "binary: unknown opcode with a body", segments: req(bin(0xfe, "bn:f", "", "xyz")), want: "\x81\xfe\x00\x00\x00\x00\x00\x81\x00\x00\x00\x0f\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Unknown command", state: swallowed},
		{name: "binary: incr on a non-numeric value", segments: req(bin(0x01, "bn:g", setExtras(0, 0), "x") + bin(0x05, "bn:g", incrExtras(1, 0, 0), "")), want: "\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00.\x81\x05\x00\x00\x00\x00\x00\x06\x00\x00\x00.\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Non-numeric server-side value for incr or decr"},
		{name: "binary: incr by 2^64-1 wraps", segments: req(bin(0x01, "bn:h", setExtras(0, 0), "2") + bin(0x05, "bn:h", incrExtras(1<<64-1, 0, 0), "")), want: "\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00/\x81\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\b\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x000\x00\x00\x00\x00\x00\x00\x00\x01"},
		{name: "binary: decr below 0", segments: req(bin(0x01, "bn:i", setExtras(0, 0), "5") + bin(0x06, "bn:i", incrExtras(10, 0, 0), "")), want: "\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x001\x81\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\b\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x002\x00\x00\x00\x00\x00\x00\x00\x00"},
		{name: "binary: quiet get miss then noop", segments: req(bin(0x09, "bn:j", "", "") + bin(0x0a, "", "", "")), want: "\x81\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00"},
		{name: "binary: bad magic after a request", segments: req(bin(0x0a, "", "", ""), "\x42"+strings.Repeat("\x00", 23)),
			await: req(binNoopReply), want: binNoopReply, state: closedConn},
		{name: "binary: bad magic in the same read as a request", segments: req(bin(0x00, "bn:l", "", "") + "\x42" + strings.Repeat("\x00", 23)),
			want: "\x81\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\t\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00Not found", state: closedConn},
		{name: "binary: split across tiny writes", style: writeTiny,
			segments: req(bin(0x01, "bn:k", setExtras(7, 0), "abc") + bin(0x0e, "bn:k", "", "def") + bin(0x00, "bn:k", "", "") + bin(0x04, "bn:k", "", "")), want: "\x81\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x003\x81\x0e\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x004\x81\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\n\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x004\x00\x00\x00\aabcdef\x81\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00"},
	}
)

// maskBinaryCAS zeroes the CAS field of every binary response packet in
// reply (uniques differ between servers by design). Bytes that do not parse
// as packets are left alone.
func maskBinaryCAS(reply string) string {
	b := []byte(reply)
	for off := 0; off+24 <= len(b) && b[off] == 0x81; {
		copy(b[off+16:off+24], make([]byte, 8))
		off += 24 + int(binary.BigEndian.Uint32(b[off+8:]))
	}
	return string(b)
}

// bin builds a binary-protocol request with opaque 0x01020304.
func bin(op byte, key, extras, value string) string {
	return binRaw(0x80, op, len(key), len(extras), len(extras)+len(key)+len(value), extras+key+value)
}

// binRaw builds a binary request header with the given lengths, which need
// not agree with body, followed by body.
func binRaw(magic, op byte, keyLen, extLen, bodyLen int, body string) string {
	h := make([]byte, 24)
	h[0], h[1] = magic, op
	binary.BigEndian.PutUint16(h[2:], uint16(keyLen))
	h[4] = byte(extLen)
	binary.BigEndian.PutUint32(h[8:], uint32(bodyLen))
	binary.BigEndian.PutUint32(h[12:], 0x01020304)
	return string(h) + body
}

// setExtras are the flags and expiration of a binary set.
func setExtras(flags, exptime uint32) string {
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, flags)
	binary.BigEndian.PutUint32(b[4:], exptime)
	return string(b)
}

// incrExtras are the delta, initial value and expiration of a binary incr.
func incrExtras(delta, initial uint64, exptime uint32) string {
	b := make([]byte, 20)
	binary.BigEndian.PutUint64(b, delta)
	binary.BigEndian.PutUint64(b[8:], initial)
	binary.BigEndian.PutUint32(b[16:], exptime)
	return string(b)
}

// catalogue returns every case with its dialect filled in.
func catalogue() []badInput {
	var all []badInput
	for _, set := range []struct {
		dialect string
		cases   []badInput
	}{{"text", textBadInput}, {"meta", metaBadInput}, {"binary", binaryBadInput}} {
		for _, c := range set.cases {
			c.dialect = set.dialect
			all = append(all, c)
		}
	}
	return all
}

// probeDialect checks that the server at addr answers a request of the
// dialect: a failed probe is a test failure, so that a dialect the server
// stopped speaking cannot drop its catalogue cases quietly.
func probeDialect(addr, dialect string) error {
	var probe, want string
	switch dialect {
	case "text":
		probe, want = sentinel, sentinelReply
	case "meta":
		probe, want = "mn\r\n", "MN\r\n"
	case "binary":
		// A binary noop: magic 0x80, opcode 0x0a, all else zero.
		probe = "\x80\x0a" + strings.Repeat("\x00", 22)
		want = "\x81\x0a"
	}
	c, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard: the reply ends the probe
	if _, err := c.Write([]byte(probe)); err != nil {
		return err
	}
	buf := make([]byte, len(want))
	n, err := io.ReadFull(c, buf)
	if string(buf[:n]) != want {
		return fmt.Errorf("%s probe %q answered %q (%v), want %q", dialect, probe, buf[:n], err, want)
	}
	return nil
}

// converseDialect runs one case with the sentinel of its dialect.
func converseDialect(addr string, tc badInput, quiet time.Duration) (conversation, error) {
	if tc.dialect == "binary" {
		return converseWith(addr, tc.segments, tc.await, tc.style, quiet, binarySentinel, binarySentinelReply)
	}
	return converse(addr, tc.segments, tc.await, tc.style, quiet)
}

// binNoopReply is the reply to bin(0x0a, "", "", ""), a noop.
const binNoopReply = "\x81\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x00\x00\x00\x00\x00\x00\x00\x00"

// quietFor is how long a connection must stay silent, after the server
// has read every byte sent, before the driver decides it is swallowing
// input (see settle). Where the expected outcome is not swallowing, a
// correct server ends the exchange itself (the sentinel's reply or a
// close), so the wait is the hang guard; where it is, the wait is what the
// case costs.
func quietFor(expect streamState) time.Duration {
	if expect == swallowed {
		return 800 * time.Millisecond
	}
	return hangGuard
}

// runCatalogue runs every case against addr.
func runCatalogue(t *testing.T, addr string, reference bool) {
	for _, d := range []string{"text", "meta", "binary"} {
		if err := probeDialect(addr, d); err != nil {
			t.Errorf("the server does not speak %s (its catalogue cases run anyway): %v", d, err)
		}
	}
	for _, tc := range catalogue() {
		want, state := tc.want, tc.state
		if tc.newer != "" {
			if _, ok := transcript.Lookup(tc.newer); !ok {
				t.Fatalf("%s: %q is not in transcript.Differences", tc.name, tc.newer)
			}
			if reference {
				want = tc.mcWant
			}
		}
		if reference && tc.exception != "" {
			if !tc.mcDiffers {
				continue
			}
			want, state = tc.mcWant, tc.mcState
		}
		got, err := converseDialect(addr, tc, quietFor(state))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.robust {
			continue
		}
		if tc.dialect == "binary" {
			got.reply, want = maskBinaryCAS(got.reply), maskBinaryCAS(want)
		}
		if got.reply != want || got.state != state {
			t.Errorf("%s (%s): request %s\n got %s (%v)\nwant %s (%v)", tc.name, tc.dialect,
				quote(strings.Join(tc.segments, "")), quote(got.reply), got.state, quote(want), state)
		}
	}
}

// TestBadInputCatalogue runs the catalogue against memcached (which must
// give the recorded replies) and against every tandem mode; afterwards
// every tandem must still serve and must have recovered from no panic.
func TestBadInputCatalogue(t *testing.T) {
	if *recordCatalogue {
		mc := testenv.StartMemcached(t)
		for _, tc := range catalogue() {
			got, err := converseDialect(mc.Addr, tc, quietFor(swallowed))
			fmt.Printf("%-50q want: %s, state: %v, err %v\n", tc.name, quote(got.reply), got.state, err)
		}
		return
	}
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		mc := testenv.StartMemcached(t)
		runCatalogue(t, mc.Addr, true)
	})
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--workers", "2")
		runCatalogue(t, s.Addr, false)
		checkHealthy(t, s)
	})
}

// checkHealthy asserts that s still runs, answers on a new connection and
// recovered from no panic.
func checkHealthy(t *testing.T, s *server) {
	t.Helper()
	if !s.alive() {
		t.Fatalf("server exited: %v\n%s", s.err, s.Log())
	}
	st, err := serverStats(s.Addr, "")
	if err != nil {
		t.Fatalf("stats after the catalogue: %v", err)
	}
	if p := st["tandem_panics"]; p != "0" {
		t.Errorf("tandem_panics = %s after the catalogue\n%s", p, s.Log())
	}
}
