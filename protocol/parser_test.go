package protocol

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const testMaxValue = 1 << 20

type parseCase struct {
	name string
	in   string
	want []string
}

// Shorthands for expected descriptions.
const (
	eUnknown = `error "ERROR"`
	eFormat  = `error "CLIENT_ERROR bad command line format"`
	eChunk   = `error "CLIENT_ERROR bad data chunk"`
	eLarge   = `error "SERVER_ERROR object too large for cache"`
	eExptime = `error "CLIENT_ERROR invalid exptime argument"`
	eDelta   = `error "CLIENT_ERROR invalid numeric delta argument"`
	eUsage   = `error "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"`
	eClose   = `error "" close`
)

var (
	key250 = strings.Repeat("k", 250)
	key251 = strings.Repeat("k", 251)
)

// Every expectation below follows memcached 1.6.18 (checked against the real
// server; see testdata/transcripts for the replies).
var parseCases = []parseCase{
	// Framing and blank input.
	{"empty line crlf", "\r\n", []string{eFormat}},
	{"empty line lf", "\n", []string{eFormat}},
	{"only spaces", "   \r\n", []string{eUnknown}},
	{"one byte command", "a\r\n", []string{eFormat}},
	{"unknown command", "ab\r\n", []string{eUnknown}},
	{"uppercase is unknown", "GET a\r\n", []string{eUnknown}},
	{"incomplete line", "get a", []string{"pending 5 need=0"}},
	{"bare lf", "get a\n", []string{`get keys=["a"]`}},
	{"cr cr lf keeps one cr", "get a\r\r\n", []string{`get keys=["a\r"]`}},
	{"leading spaces", "   get  a  \r\n", []string{eUnknown}}, // newer.go: command name
	{"inner spaces", "get  a  \r\n", []string{`get keys=["a"]`}},
	{"nul is a byte of the line", "get k\x00y z\r\n", []string{`get keys=["k\x00y" "z"]`}}, // newer.go: command name
	{"nul in command", "ge\x00t k\r\n", []string{eUnknown}},
	{"nul line", "\x00\r\n", []string{eFormat}},
	{"pipelined", "get a\r\nget b\r\nversion\r\n", []string{`get keys=["a"]`, `get keys=["b"]`, "version"}},

	// Retrieval.
	{"get no key", "get\r\n", []string{eFormat}}, // newer.go: too few tokens
	{"get space no key", "get \r\n", []string{eFormat}},
	{"gets no key", "gets\r\n", []string{eFormat}},
	{"getx", "getx a\r\n", []string{eUnknown}},
	{"get many keys", "get a b c\r\n", []string{`get keys=["a" "b" "c"]`}},
	{"gets", "gets a b\r\n", []string{`gets keys=["a" "b"]`}},
	{"bget is gone", "bget a\r\n", []string{eUnknown}}, // newer.go: command name
	{"get control bytes in key", "get k\x01y k\ty k\x7fy k\xffy\r\n", []string{`get keys=["k\x01y" "k\ty" "k\x7fy" "k\xffy"]`}},
	{"get cr inside key", "get k\rx\r\n", []string{`get keys=["k\rx"]`}},
	{"get noreply is a key", "get a noreply\r\n", []string{`get keys=["a" "noreply"]`}},
	{"get key 250", "get " + key250 + "\r\n", []string{`get keys=["` + key250 + `"]`}},
	{"get key 251", "get " + key251 + "\r\n", []string{eFormat + " failed=get"}},
	{"get second key 251", "get a " + key251 + " b\r\n", []string{eFormat + ` failed=get keys=["a"]`}},
	{"get 26 keys crosses token window", "get a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n",
		[]string{`get keys=["a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w" "x" "y" "z"]`}},
	{"get key 251 past token window", "get a b c d e f g h i j k l m n o p q r s t u v w " + key251 + "\r\n",
		[]string{eFormat + ` failed=get keys=["a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w"]`}},
	{"get spaces past token window", "get a b c d e f g h i j k l m n o p q r s t u v    w   \r\n",
		[]string{`get keys=["a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w"]`}},
	{"gat", "gat 10 a b\r\n", []string{`gat keys=["a" "b"] exp=10`}},
	{"gats", "gats -1 a\r\n", []string{`gats keys=["a"] exp=-1`}},
	{"gat no key", "gat 10\r\n", []string{eFormat}}, // newer.go: too few tokens
	{"gat nothing", "gat\r\n", []string{eFormat}},
	{"gat bad exptime", "gat abc k\r\n", []string{eExptime + " failed=gat"}},
	{"gat exptime above 32 bits", "gat 4294967297 k\r\n", []string{`error "CLIENT_ERROR invalid exptime argument" failed=gat`}}, // newer.go: strict numbers
	{"gat exptime minus", "gat - k\r\n", []string{`gat keys=["k"]`}},
	{"gat exptime overflow 64 bits", "gat 99999999999999999999 k\r\n", []string{eExptime + " failed=gat"}},

	// Storage.
	{"set", "set k 0 0 5\r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"set fields", "set k 42 100 5\r\nhello\r\n", []string{`set key="k" flags=42 exp=100 data="hello"`}},
	{"set noreply", "set k 0 0 5 noreply\r\nhello\r\n", []string{`set key="k" data="hello" noreply`}},
	{"set NOREPLY ignored", "set k 0 0 5 NOREPLY\r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"set extra token ignored", "set k 0 0 5 foo\r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"add", "add k 1 2 1\r\nx\r\n", []string{`add key="k" flags=1 exp=2 data="x"`}},
	{"replace", "replace k 0 0 1\r\nx\r\n", []string{`replace key="k" data="x"`}},
	{"append", "append k 0 0 1\r\nx\r\n", []string{`append key="k" data="x"`}},
	{"prepend", "prepend k 0 0 1\r\nx\r\n", []string{`prepend key="k" data="x"`}},
	{"cas", "cas k 0 0 1 77\r\nx\r\n", []string{`cas key="k" cas=77 data="x"`}},
	{"cas noreply", "cas k 0 0 1 77 noreply\r\nx\r\n", []string{`cas key="k" cas=77 data="x" noreply`}},
	{"cas max unique", "cas k 0 0 1 18446744073709551615\r\nx\r\n", []string{`cas key="k" cas=18446744073709551615 data="x"`}},
	{"cas missing unique", "cas k 0 0 1\r\nx\r\n", []string{eFormat, "none"}},                                            // the data block swallowed (newer.go: swallow rejected data)
	{"cas noreply as unique", "cas k 0 0 1 noreply\r\nx\r\n", []string{eFormat + ` failed=cas key="k" noreply`, "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"cas bad unique", "cas k 0 0 1 abc\r\nx\r\n", []string{eFormat + ` failed=cas key="k"`, "none"}},                    // the data block swallowed (newer.go: swallow rejected data)
	{"cas negative unique", "cas k 0 0 1 -1\r\nx\r\n", []string{eFormat + ` failed=cas key="k"`, "none"}},                // the data block swallowed (newer.go: swallow rejected data)
	{"cas too many tokens", "cas k 0 0 1 5 6 7\r\nx\r\n", []string{`cas key="k" cas=5 data="x"`}},                        // newer.go: extra tokens
	{"empty value", "set k 0 0 0\r\n\r\n", []string{`set key="k" data=""`}},
	{"value with crlf inside", "set k 0 0 4\r\na\r\nb\r\n", []string{`set key="k" data="a\r\nb"`}},
	{"line bare lf", "set k 0 0 5\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"line cr cr lf", "set k 0 0 5\r\r\nhello\r\n", []string{eFormat, eUnknown}}, // newer.go: strict numbers
	{"trailing space", "set k 0 0 5 \r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"double spaces", "set  k  0  0  5\r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"nul in the length", "set k 0 0 1\x00 junk\r\nx\r\n", []string{eFormat, eFormat}}, // newer.go: command name, strict numbers
	{"nul after the flags", "set k 5\x00x 0 1\r\nx\r\n", []string{`set key="k" flags=5 data="x"`}},
	{"set control byte key", "set k\x01y 0 0 1\r\nx\r\n", []string{`set key="k\x01y" data="x"`}},
	{"set too few tokens", "set k 0 0\r\nhello\r\n", []string{eFormat, eUnknown}},
	{"set too many tokens", "set k 0 0 5 noreply foo\r\nhello\r\n", []string{`set key="k" data="hello"`}}, // newer.go: extra tokens
	{"set extra tokens noreply last", "set k 0 0 5 foo noreply\r\nhello\r\n", []string{`set key="k" data="hello" noreply`}},
	{"set 30 tokens", "set k 0 0 1 a b c d e f g h i j k l m n o p q r s t u v w x y z\r\nx\r\n", []string{`set key="k" data="x"`}},
	{"set noreply as length", "set k 0 0 noreply\r\nhello\r\n", []string{eFormat + " noreply", eUnknown}}, // sent all the same
	{"set negative length", "set k 0 0 -1\r\nhello\r\n", []string{eFormat, eUnknown}},
	{"set plus length", "set k 0 0 +1\r\nh\r\n", []string{eFormat, eFormat}},
	{"set bad length", "set k 0 0 abc\r\nhello\r\n", []string{eFormat, eUnknown}},
	{"set length INT_MAX", "set k 0 0 2147483647\r\nhello\r\n", []string{eFormat, eUnknown}},
	{"set length INT_MAX-1", "set k 0 0 2147483646\r\nhello\r\n", []string{eFormat, eUnknown}},
	{"set length above 32 bits", "set k 0 0 4294967297\r\nh\r\n", []string{eFormat, eFormat}}, // newer.go: strict numbers
	{"set length minus zero", "set k 0 0 -0\r\n\r\n", []string{`set key="k" data=""`}},
	{"set negative flags", "set k -1 0 5\r\nhello\r\n", []string{eFormat + ` failed=set key="k"`, "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"set minus zero flags", "set k -0 0 5\r\nhello\r\n", []string{`set key="k" data="hello"`}},
	{"set max flags", "set k 4294967295 0 1\r\nx\r\n", []string{`set key="k" flags=4294967295 data="x"`}},
	{"set flags truncated", "set k 4294967296 0 1\r\nx\r\n", []string{`set key="k" data="x"`}},
	{"set flags 2^64-1 truncated", "set k 18446744073709551615 0 1\r\nx\r\n", []string{`set key="k" flags=4294967295 data="x"`}},
	{"set flags overflow", "set k 18446744073709551616 0 1\r\nx\r\n", []string{eFormat + ` failed=set key="k"`, "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"set flags negated overflow", "set k -18446744073709551615 0 1\r\nx\r\n", []string{`set key="k" flags=1 data="x"`}},
	{"set plus flags", "set k +5 0 1\r\nx\r\n", []string{`set key="k" flags=5 data="x"`}},
	{"set tab before flags", "set k \t5 0 1\r\nx\r\n", []string{`set key="k" flags=5 data="x"`}},
	{"set tab after flags", "set k 5\t7 0 1\r\nx\r\n", []string{`set key="k" flags=5 data="x"`}},
	{"set junk after flags", "set k 5x 0 1\r\nx\r\n", []string{eFormat + ` failed=set key="k"`, "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"set exptime truncated", "set k 0 4294967297 1\r\nx\r\n", []string{`set key="k" exp=1 data="x"`}},
	{"set negative exptime", "set k 0 -1 1\r\nx\r\n", []string{`set key="k" exp=-1 data="x"`}},
	{"set key 250", "set " + key250 + " 0 0 1\r\nx\r\n", []string{`set key="` + key250 + `" data="x"`}},
	{"set key 251", "set " + key251 + " 0 0 1\r\nx\r\n", []string{eFormat + " failed=set", "none"}},                         // the data block swallowed (newer.go: swallow rejected data)
	{"set key 251 noreply", "set " + key251 + " 0 0 1 noreply\r\nx\r\n", []string{eFormat + " failed=set noreply", "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"data incomplete", "set k 0 0 5\r\nhel", []string{"pending 16 need=20"}},
	{"data missing crlf", "set k 0 0 5\r\nhello", []string{"pending 18 need=20"}},
	{"bad chunk then command", "set k 0 0 5\r\nhelloXXget k\r\n", []string{eChunk + ` failed=set key="k"`, `get keys=["k"]`}},
	{"bad chunk then lf", "set k 0 0 5\r\nhelloX\r\n", []string{eChunk + ` failed=set key="k"`, eFormat}},
	{"bad chunk long", "set k 0 0 5\r\nhelloXX\r\n", []string{eChunk + ` failed=set key="k"`, eFormat}},
	{"bad chunk lf only", "set k 0 0 5\r\nhello\nX", []string{eChunk + ` failed=set key="k"`}},
	{"bad chunk noreply", "set k 0 0 5 noreply\r\nhelloXX\r\n", []string{eChunk + ` failed=set key="k" noreply`, eFormat}},
	{"bad chunk empty value", "set k 0 0 0\r\nXX\r\n", []string{eChunk + ` failed=set key="k"`, eFormat}},
	{"bad chunk inner lf", "set k 0 0 2\r\na\nb\r\n", []string{eChunk + ` failed=set key="k"`, eFormat}},

	// Too large: the declared block is swallowed whatever it holds.
	{"too large", "set k 0 0 1048577\r\n" + strings.Repeat("v", 1048577) + "\r\nget k\r\n",
		[]string{eLarge + ` failed=set key="k"`, "none", `get keys=["k"]`}},
	{"too large noreply", "set k 7 9 1048577 noreply\r\n" + strings.Repeat("v", 1048577) + "\r\n",
		[]string{eLarge + ` failed=set key="k" flags=7 exp=9 noreply`, "none"}},
	{"too large garbage end", "add k 0 0 1048577\r\n" + strings.Repeat("v", 1048577) + "XYget k\r\n",
		[]string{eLarge + ` failed=add key="k"`, "none", `get keys=["k"]`}},
	{"too large cas", "cas k 0 0 1048577 3\r\n" + strings.Repeat("v", 1048577) + "\r\n",
		[]string{eLarge + ` failed=cas key="k" cas=3`, "none"}},
	{"too large huge declared", "set k 0 0 2147483645\r\nabc",
		[]string{eLarge + ` failed=set key="k"`, "none"}},
	{"max value fits", "set k 0 0 1048576\r\n" + strings.Repeat("v", 1048576) + "\r\n",
		[]string{`set key="k" data="` + strings.Repeat("v", 1048576) + `"`}},

	// delete.
	{"delete", "delete k\r\n", []string{`delete key="k"`}},
	{"delete nothing", "delete\r\n", []string{eFormat}}, // newer.go: too few tokens
	{"delete 0", "delete k 0\r\n", []string{`delete key="k"`}},
	{"delete noreply", "delete k noreply\r\n", []string{`delete key="k" noreply`}},
	{"delete 0 noreply", "delete k 0 noreply\r\n", []string{`delete key="k" noreply`}},
	{"delete noreply as key", "delete noreply\r\n", []string{`delete key="noreply"`}},
	{"delete hold 1", "delete k 1\r\n", []string{eUsage + " failed=delete"}},
	{"delete hold 00", "delete k 00\r\n", []string{eUsage + " failed=delete"}},
	{"delete hold 1 noreply", "delete k 1 noreply\r\n", []string{eUsage + " failed=delete noreply"}},
	{"delete noreply noreply", "delete k noreply noreply\r\n", []string{eUsage + " failed=delete noreply"}},
	{"delete 0 0", "delete k 0 0\r\n", []string{eUsage + " failed=delete"}},
	{"delete too many", "delete k 0 noreply x\r\n", []string{eUnknown}},
	{"delete key 251", "delete " + key251 + "\r\n", []string{eFormat + " failed=delete"}},
	{"delete key 251 hold 1", "delete " + key251 + " 1\r\n", []string{eUsage + " failed=delete"}},
	{"delete key 251 noreply", "delete " + key251 + " noreply\r\n", []string{eFormat + " failed=delete noreply"}},

	// incr / decr.
	{"incr", "incr k 5\r\n", []string{`incr key="k" delta=5`}},
	{"decr", "decr k 3\r\n", []string{`decr key="k" delta=3`}},
	{"incr noreply", "incr k 1 noreply\r\n", []string{`incr key="k" delta=1 noreply`}},
	{"incr extra token", "incr k 1 2\r\n", []string{`incr key="k" delta=1`}},
	{"incr too few", "incr k\r\n", []string{eFormat}},                       // newer.go: too few tokens
	{"incr too many", "incr k 1 2 3\r\n", []string{`incr key="k" delta=1`}}, // newer.go: extra tokens
	{"incr noreply as delta", "incr k noreply\r\n", []string{eDelta + ` failed=incr key="k" noreply`}},
	{"incr negative", "incr k -1\r\n", []string{eDelta + ` failed=incr key="k"`}},
	{"incr non numeric", "incr k abc\r\n", []string{eDelta + ` failed=incr key="k"`}},
	{"incr overflow", "incr k 18446744073709551616\r\n", []string{eDelta + ` failed=incr key="k"`}},
	{"incr max", "incr k 18446744073709551615\r\n", []string{`incr key="k" delta=18446744073709551615`}},
	{"incr negated max", "incr k -18446744073709551615\r\n", []string{`error "CLIENT_ERROR invalid numeric delta argument" failed=incr key="k"`}}, // newer.go: strict numbers
	{"incr minus zero", "incr k -0\r\n", []string{`error "CLIENT_ERROR invalid numeric delta argument" failed=incr key="k"`}},
	{"incr plus", "incr k +5\r\n", []string{`error "CLIENT_ERROR invalid numeric delta argument" failed=incr key="k"`}},
	{"incr tab minus after", "incr k 5\t-\r\n", []string{`error "CLIENT_ERROR invalid numeric delta argument" failed=incr key="k"`}},
	{"incr big with minus after tab", "incr k 18446744073709551615\t-\r\n", []string{eDelta + ` failed=incr key="k"`}},
	{"incr key 251", "incr " + key251 + " 1\r\n", []string{eFormat + " failed=incr"}},
	{"decr key 251 noreply", "decr " + key251 + " 1 noreply\r\n", []string{eFormat + " failed=decr noreply"}},

	// touch.
	{"touch", "touch k 10\r\n", []string{`touch key="k" exp=10`}},
	{"touch noreply", "touch k 10 noreply\r\n", []string{`touch key="k" exp=10 noreply`}},
	{"touch extra", "touch k 10 20\r\n", []string{`touch key="k" exp=10`}},
	{"touch too few", "touch k\r\n", []string{eFormat}},                          // newer.go: too few tokens
	{"touch too many", "touch k 10 20 30\r\n", []string{`touch key="k" exp=10`}}, // newer.go: extra tokens
	// memcached 1.6.45's number limits (newer.go: strict numbers), checked against it.
	{"touch exptime int32 max", "touch k 2147483647\r\n", []string{`touch key="k" exp=2147483647`}},
	{"touch exptime int32 min", "touch k -2147483648\r\n", []string{`touch key="k" exp=-2147483648`}},
	{"touch exptime over int32", "touch k 2147483648\r\n", []string{`error "CLIENT_ERROR invalid exptime argument" failed=touch key="k"`}},
	{"touch exptime under int32", "touch k -2147483649\r\n", []string{`error "CLIENT_ERROR invalid exptime argument" failed=touch key="k"`}},
	{"incr delta uint64 max", "incr k 18446744073709551615\r\n", []string{`incr key="k" delta=18446744073709551615`}},
	{"verbosity uint32 max", "verbosity 4294967295\r\n", []string{`verbosity delta=4294967295 args=["4294967295"]`}},
	{"verbosity over uint32", "verbosity 4294967296\r\n", []string{eFormat + " failed=verbosity"}},
	{"length of 11 digits", "set k 0 0 00000000001\r\nx\r\n", []string{`set key="k" data="x"`}},
	{"length of 12 digits", "set k 0 0 000000000001\r\nx\r\n", []string{eFormat, eFormat}},
	{"touch bad exptime", "touch k abc\r\n", []string{eExptime + ` failed=touch key="k"`}},
	{"touch bad exptime noreply", "touch k abc noreply\r\n", []string{eExptime + ` failed=touch key="k" noreply`}},
	{"touch noreply as exptime", "touch k noreply\r\n", []string{eExptime + ` failed=touch key="k" noreply`}},
	{"touch key 251", "touch " + key251 + " 1\r\n", []string{eFormat + " failed=touch"}},

	// flush_all.
	{"flush_all", "flush_all\r\n", []string{"flush_all"}},
	{"flush_all 0", "flush_all 0\r\n", []string{`flush_all args=["0"]`}},
	{"flush_all delay", "flush_all 10\r\n", []string{`flush_all exp=10 args=["10"]`}},
	{"flush_all noreply", "flush_all noreply\r\n", []string{"flush_all noreply"}},
	{"flush_all delay noreply", "flush_all 10 noreply\r\n", []string{`flush_all exp=10 args=["10"] noreply`}},
	{"flush_all negative", "flush_all -1\r\n", []string{`flush_all exp=-1 args=["-1"]`}},
	{"flush_all extra ignored", "flush_all 10 abc\r\n", []string{`flush_all exp=10 args=["10" "abc"]`}},
	{"flush_all bad", "flush_all abc\r\n", []string{eExptime + " failed=flush_all"}},
	{"flush_all bad noreply", "flush_all abc noreply\r\n", []string{eExptime + " failed=flush_all noreply"}},
	{"flush_all noreply first", "flush_all noreply 10\r\n", []string{eExptime + " failed=flush_all"}},
	{"flush_all overflow", "flush_all 99999999999999999999\r\n", []string{eExptime + " failed=flush_all"}},
	{"flush_all too many", "flush_all 1 2 3\r\n", []string{`flush_all exp=1 args=["1" "2" "3"]`}}, // newer.go: extra tokens
	{"flush_all leading space", " flush_all\r\n", []string{`flush_all`}},

	// verbosity, version, quit, stats, shutdown.
	{"verbosity", "verbosity 1\r\n", []string{`verbosity delta=1 args=["1"]`}},
	{"verbosity noreply", "verbosity 1 noreply\r\n", []string{`verbosity delta=1 args=["1"] noreply`}},
	{"verbosity extra", "verbosity 1 2\r\n", []string{`verbosity delta=1 args=["1" "2"]`}},
	{"verbosity none", "verbosity\r\n", []string{eFormat + " failed=verbosity"}},                    // newer.go: too few tokens
	{"verbosity too many", "verbosity 1 2 3\r\n", []string{`verbosity delta=1 args=["1" "2" "3"]`}}, // newer.go: extra tokens
	{"verbosity bad", "verbosity abc\r\n", []string{eFormat + " failed=verbosity"}},
	{"verbosity negative", "verbosity -1\r\n", []string{eFormat + " failed=verbosity"}},
	{"verbosity noreply only", "verbosity noreply\r\n", []string{eFormat + " failed=verbosity noreply"}},
	{"version", "version\r\n", []string{"version"}},
	{"version args ignored", "version foo bar\r\n", []string{"version"}},
	{"versions", "versions\r\n", []string{eUnknown}},
	{"quit", "quit\r\n", []string{"quit"}},
	{"quit args", "quit foo\r\n", []string{"quit"}},
	{"stats", "stats\r\n", []string{"stats"}},
	{"stats args", "stats detail on\r\n", []string{`stats args=["detail" "on"]`}},
	{"stats noreply is an arg", "stats noreply\r\n", []string{`stats args=["noreply"]`}},
	{"stats token window", "stats a b c d e f g h i j k l m n o p q r s t u v w x y z\r\n",
		[]string{`stats args=["a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v"]`}},
	{"shutdown", "shutdown\r\n", []string{"shutdown"}},
	{"shutdown graceful", "shutdown graceful\r\n", []string{`shutdown args=["graceful"]`}},

	// Meta commands go to the meta parser; other two-byte m-commands are unknown.
	{"mx", "mx\r\n", []string{eUnknown}},
	{"m", "m\r\n", []string{eFormat}},

	{"lru_crawler", "lru_crawler metadump all\r\n", []string{`lru_crawler args=["metadump" "all"]`}},

	// An unknown command that ends in an HTTP version closes the
	// connection without a reply, where memcached's dispatch gets that far.
	{"http get", "GET / HTTP/1.0\r\n", []string{eClose}},
	{"http put", "PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1\r\n", []string{eClose}},
	{"http delete", "DELETE HTTP/1.1\r\n", []string{eClose}},
	{"http bare version", "HTTP/1.0\r\n", []string{eUnknown}}, // newer.go: command name (two tokens at least)
	{"http three-letter m", "mzz HTTP/1.0\r\n", []string{eClose}},
	{"http 23rd token", "zz" + strings.Repeat(" a", 21) + " HTTP/1.0 b c\r\n", []string{eClose}},
	{"http 22nd token is not the last", "zz" + strings.Repeat(" a", 20) + " HTTP/1.0 b c\r\n", []string{eUnknown}},
	{"http not last", "zz HTTP/1.0 noreply\r\n", []string{eUnknown + " noreply"}}, // newer.go: command name (silent)
	{"http lower case", "zz http/1.0\r\n", []string{eUnknown}},
	{"http one-byte command", "x HTTP/1.0\r\n", []string{eClose}}, // newer.go: command name
	{"http dispatched letter", "sz HTTP/1.0\r\n", []string{eClose}},
	{"http two-letter m", "mz HTTP/1.0\r\n", []string{eClose}},
	{"http known to memcached", "watch HTTP/1.1\r\n", []string{`watch args=["HTTP/1.1"]`}},
	{"slabs", "slabs automove 1\r\n", []string{`slabs args=["automove" "1"]`}},
	{"cache_memlimit", "cache_memlimit 64 noreply\r\n", []string{`cache_memlimit args=["64" "noreply"] noreply`}},
	{"http near-miss of a known name", "watchx HTTP/1.1\r\n", []string{eClose}},

	// Overlong lines.
	{"2048 bytes without newline waits", strings.Repeat("a", 2048), []string{"pending 2048 need=0"}},
	{"2049 bytes without newline closes", strings.Repeat("a", 2049), []string{eClose}},
	{"long line with newline is answered", strings.Repeat("a", 3000) + "\r\n", []string{eUnknown}},
	{"16384-byte line is answered", strings.Repeat("a", 16382) + "\r\n", []string{eUnknown}},
	{"16385-byte line closes", strings.Repeat("a", 16383) + "\r\n", []string{eClose}},
	{"long set line", "set " + strings.Repeat("a", 3000) + " 0 0 1\r\nx\r\n", []string{eFormat + " failed=set", "none"}}, // the data block swallowed (newer.go: swallow rejected data)
	{"long get waits", "get " + strings.Repeat("a", 3000), []string{"pending 3004 need=0"}},
	{"long gets waits", "gets " + strings.Repeat("a", 3000), []string{"pending 3005 need=0"}},
	{"long get 100 spaces waits", strings.Repeat(" ", 100) + "get " + strings.Repeat("a", 3000), []string{"pending 3104 need=0"}},
	{"long get 101 spaces closes", strings.Repeat(" ", 101) + "get " + strings.Repeat("a", 3000), []string{eClose}},
	{"long gat closes", "gat 1 " + strings.Repeat("a", 3000), []string{eClose}},
	{"long get line answered", "get " + strings.Repeat("a", 30000) + "\r\n", []string{eFormat + " failed=get"}},
	{"get after complete line then garbage", "get a\r\n" + strings.Repeat("b", 2100), []string{`get keys=["a"]`, eClose}},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAll(NewParser(testMaxValue), []byte(tc.in))
			if err != "" {
				t.Fatalf("input %s: contract violation: %s", quoteShort(tc.in), err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("input %s\n got: %s\nwant: %s", quoteShort(tc.in), quoteAll(got), quoteAll(tc.want))
			}
		})
	}
}

// TestParseSplit feeds every table case byte by byte: the result must match
// the whole-buffer parse (swallowed bytes aside). Cases whose outcome
// depends on chunking in memcached too (overlong lines) are skipped.
func TestParseSplit(t *testing.T) {
	for _, tc := range parseCases {
		if len(tc.in) > 2048 && bytes.IndexByte([]byte(tc.in[:2049]), '\n') < 0 {
			continue
		}
		whole, _ := parseAll(NewParser(testMaxValue), []byte(tc.in))
		whole = dropNone(whole)
		var left int
		if len(whole) > 0 && strings.HasPrefix(whole[len(whole)-1], "pending ") {
			fmt.Sscanf(whole[len(whole)-1], "pending %d", &left)
			whole = whole[:len(whole)-1]
		}
		sizes := []int{1, 7}
		if len(tc.in) > 100000 {
			sizes = []int{4093} // keep megabyte cases fast
		}
		for _, size := range sizes {
			got, gotLeft, err := stream(NewParser(testMaxValue), []byte(tc.in), func() int { return size })
			if err != "" {
				t.Fatalf("%s: chunk %d: contract violation: %s", tc.name, size, err)
			}
			if !slices.Equal(got, whole) || gotLeft != left {
				t.Errorf("%s: chunk %d: input %s\n got: %s (left %d)\nwant: %s (left %d)",
					tc.name, size, quoteShort(tc.in), quoteAll(got), gotLeft, quoteAll(whole), left)
			}
		}
	}
}

func TestDialect(t *testing.T) {
	p := NewParser(testMaxValue)
	if p.Dialect() != DialectUnknown {
		t.Fatalf("new parser dialect %d", p.Dialect())
	}
	var r Request
	if n := p.Next(nil, &r); n != 0 || p.Dialect() != DialectUnknown {
		t.Fatalf("empty input: n=%d dialect=%d", n, p.Dialect())
	}
	p.Next([]byte("ver"), &r)
	if p.Dialect() != DialectText {
		t.Fatalf("text input: dialect %d", p.Dialect())
	}
	// A later 0x80 byte is just text.
	if n := p.Next([]byte("\x80x\r\n"), &r); n != 4 || r.Cmd != CmdError {
		t.Fatalf("0x80 on a text connection: n=%d %s", n, describe(&r))
	}
	p = NewParser(testMaxValue)
	p.Next([]byte{0x80, 0x00}, &r)
	if p.Dialect() != DialectBinary {
		t.Fatalf("binary input: dialect %d", p.Dialect())
	}
}

func TestItemSizeMax(t *testing.T) {
	// Boundaries measured on memcached 1.6.18 with -I 1m: key "kk" holds a
	// value of 1048515 bytes with flags 0, and 1048511 with flags != 0.
	cases := []struct {
		name  string
		flags string
		size  int
		cas   bool
		large bool
	}{
		{"flags 0 fits", "0", 1048515, true, false},
		{"flags 0 too large", "0", 1048516, true, true},
		{"flags 1 fits", "1", 1048511, true, false},
		{"flags 1 too large", "1", 1048512, true, true},
		{"without cas fits", "0", 1048523, false, false},
		{"without cas too large", "0", 1048524, false, true},
	}
	for _, tc := range cases {
		p := NewParser(testMaxValue)
		p.SetItemSizeMax(1<<20, tc.cas)
		in := fmt.Sprintf("set kk %s 0 %d\r\n", tc.flags, tc.size)
		var r Request
		n := p.Next([]byte(in), &r)
		large := n == len(in) && r.Cmd == CmdError && r.Err.Kind == ErrTooLarge
		if large != tc.large || (!large && (n != 0 || p.NeedBytes() != len(in)+tc.size+2)) {
			t.Errorf("%s: input %q: n=%d need=%d %s, want too large=%v", tc.name, in, n, p.NeedBytes(), describe(&r), tc.large)
		}
	}
}

func TestNeedBytes(t *testing.T) {
	p := NewParser(testMaxValue)
	var r Request
	in := []byte("set k 0 0 10\r\n0123")
	if n := p.Next(in, &r); n != 0 || p.NeedBytes() != 26 {
		t.Fatalf("n=%d need=%d, want 0 and 26", n, p.NeedBytes())
	}
	// Fewer bytes than announced: no progress, need unchanged.
	in = append(in, "45"...)
	if n := p.Next(in, &r); n != 0 || p.NeedBytes() != 26 {
		t.Fatalf("n=%d need=%d, want 0 and 26", n, p.NeedBytes())
	}
	in = append(in, "6789\r\nget"...)
	if n := p.Next(in, &r); n != 26 || r.Cmd != CmdSet || string(r.Data) != "0123456789" || p.NeedBytes() != 0 {
		t.Fatalf("n=%d need=%d %s", n, p.NeedBytes(), describe(&r))
	}
	// A swallow progresses with any byte: need stays 0.
	p = NewParser(4)
	in = []byte("set k 0 0 10\r\n0123")
	if n := p.Next(in, &r); n != 14 || r.Err != errTooLarge || p.NeedBytes() != 0 {
		t.Fatalf("n=%d need=%d %s", n, p.NeedBytes(), describe(&r))
	}
	if n := p.Next(in[14:], &r); n != 4 || r.Cmd != CmdNone {
		t.Fatalf("swallow: n=%d %s", n, describe(&r))
	}
}

func TestGetManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("get")
	for i := range 10000 {
		fmt.Fprintf(&b, " key:%05d", i)
	}
	b.WriteString("\r\n")
	in := []byte(b.String())
	p := NewParser(testMaxValue)
	var r Request
	// Arrives in pieces: the line is longer than 2048 bytes but is a get.
	for _, cut := range []int{1000, 3000, 60000} {
		if n := p.Next(in[:cut], &r); n != 0 {
			t.Fatalf("partial line of %d bytes: n=%d %s", cut, n, describe(&r))
		}
	}
	if n := p.Next(in, &r); n != len(in) || r.Cmd != CmdGet || len(r.Keys) != 10000 {
		t.Fatalf("n=%d cmd=%s keys=%d", n, cmdName(r.Cmd), len(r.Keys))
	}
	for i, k := range r.Keys {
		if want := fmt.Sprintf("key:%05d", i); string(k) != want {
			t.Fatalf("key %d = %q, want %q", i, k, want)
		}
	}
	// Keys keeps its capacity: a second parse allocates nothing.
	allocs := testing.AllocsPerRun(10, func() { p.Next(in, &r) })
	if allocs != 0 {
		t.Errorf("re-parsing 10000 keys: %v allocs", allocs)
	}
}

func TestMaxGetLine(t *testing.T) {
	p := NewParser(testMaxValue)
	p.maxGetLine = 20000
	var r Request
	long := []byte("get " + strings.Repeat("a ", 10000)) // 20004 bytes, no newline
	if n := p.Next(long[:19000], &r); n != 0 {
		t.Fatalf("19000 bytes: n=%d %s", n, describe(&r))
	}
	if n := p.Next(long, &r); n != len(long) || r.Err != errLineTooLong {
		t.Fatalf("20004 bytes: n=%d %s", n, describe(&r))
	}
	p = NewParser(testMaxValue)
	p.maxGetLine = 20000
	line := append(long[:20000:20000], "\r\n"...)
	if n := p.Next(line, &r); n != len(line) || r.Err != errLineTooLong {
		t.Fatalf("20002-byte line: n=%d %s", n, describe(&r))
	}
}

func TestNoAllocs(t *testing.T) {
	inputs := []string{
		"get a b c d e f g h i j\r\n",
		"set k 0 0 32\r\n" + strings.Repeat("x", 32) + "\r\n",
		"incr k 5 noreply\r\n",
		"stats items\r\n",
		"set k 0 0 5\r\nhelloXX",
		"bogus\r\n",
	}
	p := NewParser(testMaxValue)
	var r Request
	r.Keys = make([][]byte, 0, 16)
	r.Args = make([][]byte, 0, 16)
	for _, in := range inputs {
		buf := []byte(in)
		allocs := testing.AllocsPerRun(100, func() { p.Next(buf, &r) })
		if allocs != 0 {
			t.Errorf("input %q: %v allocs per parse", in, allocs)
		}
	}
}

func TestSafeStrto(t *testing.T) {
	u64 := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"18446744073709551615", 1<<64 - 1, true}, {"18446744073709551616", 0, false},
		{"-1", 0, false}, {"-0", 0, true}, {"-18446744073709551615", 1, true},
		{"-9223372036854775808", 0, false}, {"-9223372036854775809", 9223372036854775807, true},
		{"+7", 7, true}, {"\t\v\f\r 7", 7, true}, {"7\t", 7, true}, {"7x", 0, false}, {"", 0, false},
		{"-", 0, false}, {"+", 0, false}, {" ", 0, false}, {"x", 0, false}, {"18446744073709551615\t-", 0, false},
		{"00000000000000000000000000042", 42, true},
	}
	for _, tc := range u64 {
		got, ok := safeStrtoull([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("safeStrtoull(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	i32 := []struct {
		in   string
		want int32
		ok   bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"2147483647", 2147483647, true}, {"2147483648", -2147483648, true},
		{"4294967297", 1, true}, {"9223372036854775807", -1, true}, {"9223372036854775808", 0, false},
		{"-9223372036854775808", 0, true}, {"-9223372036854775809", 0, false}, {"1e3", 0, false},
		{"12 ", 12, true}, {"", 0, false},
	}
	for _, tc := range i32 {
		got, ok := safeStrtol([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("safeStrtol(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSplitInvariance parses a transcript of many commands (errors and
// swallowed values included) whole, cut at every byte offset, and in random
// small chunks: every way must give the same requests.
func TestSplitInvariance(t *testing.T) {
	in := []byte(splitTranscript())
	whole, left, err := stream(NewParser(200), in, func() int { return len(in) })
	if err != "" || left != 0 {
		t.Fatalf("whole: err=%q left=%d", err, left)
	}
	if len(whole) < 150 {
		t.Fatalf("whole transcript gave only %d requests", len(whole))
	}
	var wholeFP []uint64
	streamFunc(NewParser(200), in, func() int { return len(in) }, func(r *Request) { wholeFP = append(wholeFP, fingerprint(r)) })
	fail := func(how string, sizes func() func() int) {
		got, left, err := stream(NewParser(200), in, sizes())
		t.Fatalf("%s: err=%q left=%d\n got: %s\nwant: %s", how, err, left, quoteAll(got), quoteAll(whole))
	}
	fp := make([]uint64, 0, len(wholeFP))
	for cut := 1; cut < len(in); cut++ {
		cutSizes := func() func() int {
			first := true
			return func() int {
				if first {
					first = false
					return cut
				}
				return len(in)
			}
		}
		fp = fp[:0]
		left, err := streamFunc(NewParser(200), in, cutSizes(), func(r *Request) { fp = append(fp, fingerprint(r)) })
		if err != "" || left != 0 || !slices.Equal(fp, wholeFP) {
			fail(fmt.Sprintf("cut at %d (%s | %s)", cut, quoteShort(string(in[max(0, cut-20):cut])),
				quoteShort(string(in[cut:min(len(in), cut+20)]))), cutSizes)
		}
	}
	for seed := range uint64(100) {
		maxChunk := 1 + int(seed%16)
		randSizes := func() func() int {
			rng := rand.New(rand.NewPCG(seed, 2))
			return func() int { return 1 + rng.IntN(maxChunk) }
		}
		fp = fp[:0]
		left, err := streamFunc(NewParser(200), in, randSizes(), func(r *Request) { fp = append(fp, fingerprint(r)) })
		if err != "" || left != 0 || !slices.Equal(fp, wholeFP) {
			fail(fmt.Sprintf("random chunks up to %d (seed %d)", maxChunk, seed), randSizes)
		}
	}
}

// splitTranscript is a stream exercising every command and error path whose
// outcome does not depend on chunking (maxValue 200).
func splitTranscript() string {
	var b strings.Builder
	for _, tc := range parseCases {
		if len(tc.in) > 2000 || strings.Contains(tc.name, "incomplete") || strings.HasPrefix(tc.name, "data ") ||
			strings.Contains(tc.name, "lf only") || strings.Contains(tc.name, "huge declared") {
			continue // long lines, or inputs that leave bytes pending
		}
		b.WriteString(tc.in)
	}
	b.WriteString("set big 0 0 300\r\n" + strings.Repeat("z", 300) + "\r\n")        // too large for 200: swallowed
	b.WriteString("set big 0 0 300 noreply\r\n" + strings.Repeat("\n", 300) + "AB") // swallowed whatever it holds
	b.WriteString("get " + strings.Repeat("key ", 700) + "\r\n")                    // long get line
	b.WriteString("set ok 0 0 200\r\n" + strings.Repeat("y", 200) + "\r\n")
	b.WriteString("version\r\n")
	return b.String()
}

func dropNone(s []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x == "none" })
}

func quoteShort(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%q...(%d bytes)", s[:100], len(s))
	}
	return fmt.Sprintf("%q", s)
}

func quoteAll(s []string) string {
	out := make([]string, len(s))
	for i, x := range s {
		if len(x) > 200 {
			x = x[:180] + fmt.Sprintf("...(%d bytes)", len(x))
		}
		out[i] = x
	}
	return "[" + strings.Join(out, ", ") + "]"
}

func benchParse(b *testing.B, in string) {
	buf := []byte(in)
	p := NewParser(testMaxValue)
	var r Request
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if n := p.Next(buf, &r); n != len(buf) || r.Cmd == CmdError {
			b.Fatalf("n=%d %s", n, describe(&r))
		}
	}
}

func BenchmarkParseGet1(b *testing.B) { benchParse(b, "get user:1234567\r\n") }

func BenchmarkParseGet10(b *testing.B) {
	benchParse(b, "get user:0000001 user:0000002 user:0000003 user:0000004 user:0000005 "+
		"user:0000006 user:0000007 user:0000008 user:0000009 user:0000010\r\n")
}

func BenchmarkParseSet32(b *testing.B) {
	benchParse(b, "set user:1234567 0 3600 32\r\n"+strings.Repeat("v", 32)+"\r\n")
}

// BenchmarkParseGet10Fields is the baseline: splitting the same line with
// bytes.Fields, as a naive parser would.
func BenchmarkParseGet10Fields(b *testing.B) {
	buf := []byte("get user:0000001 user:0000002 user:0000003 user:0000004 user:0000005 " +
		"user:0000006 user:0000007 user:0000008 user:0000009 user:0000010\r\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		line := buf[:bytes.IndexByte(buf, '\n')]
		if f := bytes.Fields(line); len(f) != 11 {
			b.Fatal(len(f))
		}
	}
}

// TestLine checks the command line kept for the command log.
func TestLine(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"get", "get a b\r\n", "get a b"},
		{"storage", "set k 0 0 5\r\nhello\r\n", "set k 0 0 5"},
		{"bare newline", "version\n", "version"},
		{"meta", "mg k v\r\n", "mg k v"},
		{"error", "bogus line\r\n", "bogus line"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			if n := NewParser(testMaxValue).Next([]byte(tc.in), &r); n == 0 || string(r.Line) != tc.want {
				t.Fatalf("%q: Line %q (n=%d), want %q", tc.in, r.Line, n, tc.want)
			}
		})
	}
	var r Request
	p := NewParser(testMaxValue)
	p.Next([]byte("get a\r\n"), &r)
	p.Next([]byte("set k 0 0 2000000\r\n"), &r) // too large: swallowing
	if p.Next([]byte("xxxx"), &r); r.Line != nil {
		t.Errorf("swallowed bytes kept Line %q", r.Line)
	}
}

// TestRebase checks that requests from the parser can be moved to a copy of
// their buffer, as a worker pool does when the reactor's buffer is reused.
func TestRebase(t *testing.T) {
	for _, in := range []string{
		"get a bb ccc\r\n",
		"set key 1 2 5 noreply\r\nhello\r\n",
		"set key 0 0 0\r\n\r\n",
		"stats detail dump\r\n",
		"set key 0 0 5\r\nhelloXX",
	} {
		from := []byte(in)
		var r Request
		n := NewParser(testMaxValue).Next(from, &r)
		want, wantLine := describe(&r), string(r.Line)
		to := append([]byte(nil), from...)
		clear(from) // the old buffer is reused
		r.Rebase(from, to)
		if got := describe(&r); got != want || n == 0 {
			t.Errorf("input %q: after Rebase %s, want %s", in, got, want)
		}
		if string(r.Line) != wantLine {
			t.Errorf("input %q: after Rebase Line %q, want %q", in, r.Line, wantLine)
		}
		if e := checkRequest(to, n, &r); e != "" {
			t.Errorf("input %q: after Rebase: %s", in, e)
		}
	}
}

// TestLargeClientFlags: client flags are memcached's 32 bits by default (a
// larger number truncated by the storage commands, as memcached 1.6.18 and a
// default build of 1.6.45 store it, and refused by meta F, as 1.6.45 does)
// and 64 bits with SetLargeClientFlags (a larger number refused,
// as a build with --enable-large-client-flags refuses it); binary extras
// hold 32 bits either way. The item accounting counts 8 bytes of flags then.
func TestLargeClientFlags(t *testing.T) {
	cases := []struct {
		name        string
		in          string
		small, wide string
	}{
		{"set 2^32", "set k 4294967296 0 1\r\nx\r\n", `set key="k" data="x"`, `set key="k" flags=4294967296 data="x"`},
		{"set 2^32+5", "set k 4294967301 0 1\r\nx\r\n", `set key="k" flags=5 data="x"`, `set key="k" flags=4294967301 data="x"`},
		{"set 2^64-1", "set k 18446744073709551615 0 1\r\nx\r\n", `set key="k" flags=4294967295 data="x"`, `set key="k" flags=18446744073709551615 data="x"`},
		{"set 2^64", "set k 18446744073709551616 0 2\r\nxy\r\n", `error "CLIENT_ERROR bad command line format"`, `error "CLIENT_ERROR bad command line format"`},
		{"set -1", "set k -1 0 2\r\nxy\r\n", `error "CLIENT_ERROR bad command line format"`, `error "CLIENT_ERROR bad command line format"`},
		{"cas 2^40", "cas k 1099511627776 0 1 7\r\nx\r\n", `cas key="k" cas=7 data="x"`, `cas key="k" flags=1099511627776 cas=7 data="x"`},
		{"ms F 2^63", "ms k 1 F9223372036854775808\r\nx\r\n", `error "CLIENT_ERROR bad command line format"`, `ms key="k" flags=9223372036854775808 data="x" flags=F`},
		{"ms F 2^64", "ms k 1 F18446744073709551616\r\nx\r\n", `error "CLIENT_ERROR bad command line format"`, `error "CLIENT_ERROR bad command line format"`},
		{"md x F 2^32", "md k x F4294967296\r\n", `error "CLIENT_ERROR bad command line format"`, `md key="k" flags=4294967296 flags=xF`},
	}
	for _, tc := range cases {
		for _, wide := range []bool{false, true} {
			p := NewParser(testMaxValue)
			p.SetLargeClientFlags(wide)
			got := strings.Join(parseAllMeta(p, []byte(tc.in)), "|")
			want := tc.small
			if wide {
				want = tc.wide
			}
			if got != want {
				t.Errorf("%s (large %v): %q\n got %s\nwant %s", tc.name, wide, tc.in, got, want)
			}
		}
	}
	// memcached -I 1m with key "kk" and flags != 0: 4 bytes of flags, or 8.
	for _, tc := range []struct {
		wide    bool
		fits    int
		tooLong int
	}{{false, 1048511, 1048512}, {true, 1048507, 1048508}} {
		for size, large := range map[int]bool{tc.fits: false, tc.tooLong: true} {
			p := NewParser(testMaxValue)
			p.SetItemSizeMax(1<<20, true)
			p.SetLargeClientFlags(tc.wide)
			in := fmt.Sprintf("set kk 1 0 %d\r\n", size)
			var r Request
			n := p.Next([]byte(in), &r)
			if got := n == len(in) && r.Cmd == CmdError && r.Err.Kind == ErrTooLarge; got != large {
				t.Errorf("large flags %v, %d bytes: too large %v, want %v", tc.wide, size, got, large)
			}
		}
	}
}
