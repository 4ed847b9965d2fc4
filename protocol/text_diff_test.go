package protocol

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestDiffMemcached sends random, mostly malformed command lines to a real
// memcached 1.6.18 and checks the parser against it: where a case parses to
// errors only, the parser's replies must equal memcached's byte for byte;
// where a set is accepted, memcached must have stored the flags and data the
// parser read. It starts its own memcached (testenv.StartMemcached: skipped
// loudly when memcached is not installed, a failure in CI), or uses the one
// TANDEM_MEMCACHED_ADDR names, started with default settings, e.g.
//
//	memcached -p 21211 -l 127.0.0.1 -U 0 &
//	TANDEM_MEMCACHED_ADDR=127.0.0.1:21211 go test -run TestDiffMemcached ./protocol
//
// TANDEM_DIFF_SEED picks another random sequence (default 1). Where tandem
// answers as newer memcached does (transcript.Differences), the parser's
// error carries 1.6.18's (Error.Was1618), which is what is compared, and
// the data block the parser swallows after refusing a storage line ("swallow
// rejected data") is parsed as 1.6.18 reads it, as commands. The numbers,
// spacing and token counts memcached 1.6.45 reads otherwise than 1.6.18
// (newer.go: strict numbers, command name, extra tokens) are left out
// (see extraTokens1618); the transcripts show them.
func TestDiffMemcached(t *testing.T) {
	addr := os.Getenv("TANDEM_MEMCACHED_ADDR")
	if addr == "" {
		addr = testenv.StartMemcached(t).Addr
	}
	seed, _ := strconv.ParseUint(os.Getenv("TANDEM_DIFF_SEED"), 10, 64)
	conn, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// No flush_all (a delayed flush would hide later sets), verbosity or quit.
	cmds := []string{"get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend", "cas",
		"delete", "incr", "decr", "touch", "stats", "mx", "GET", "g", "ge", "sets", "x"}
	args := []string{"dz:none", "dz:none", "dz:none", "noreply", "noreply", "0", "0", "-1", "1", "2", "00",
		"abc", "18446744073709551615", "18446744073709551616", "5x", key251, key250, "NOREPLY", "+",
		"2147483645", "99999999999999999999"}
	nums := []string{"0", "-0", "1", "+5", "\t5", "5\t-", "4294967296", "4294967295", "18446744073709551615",
		"-18446744073709551615", "-1", "\v7", "4294967297", "00012", "+0", "2592000", "3"}
	lens := []string{"0", "1", "3", "-0", "00003", "-1", "abc"}

	rng := rand.New(rand.NewPCG(seed+1, 7))
	newParser := func() *Parser {
		p := NewParser(1 << 20)
		p.SetItemSizeMax(1<<20, true)
		return p
	}
	buf := make([]byte, 1<<16)
	compared, sets := 0, 0
	for range 20000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			// A set with odd numbers: checks the accepted path too.
			b.WriteString("set dz:k" + string(rune('a'+rng.IntN(26))) + " " + nums[rng.IntN(len(nums))] + " " +
				nums[rng.IntN(len(nums))] + " " + lens[rng.IntN(len(lens))] + []string{"", " noreply", " "}[rng.IntN(3)])
		} else {
			b.WriteString(cmds[rng.IntN(len(cmds))])
			for range rng.IntN([]int{4, 8, 30}[rng.IntN(3)]) {
				b.WriteString(strings.Repeat(" ", 1+rng.IntN(2)))
				b.WriteString(args[rng.IntN(len(args))])
			}
			if rng.IntN(3) == 0 {
				b.WriteString(" ")
			}
		}
		if extraTokens1618(b.String()) {
			continue
		}
		b.WriteString([]string{"\r\n", "\r\n", "\r\n", "\n"}[rng.IntN(4)])
		in := []byte(b.String())

		// Complete the case from the parser's view of its first line.
		var r Request
		p := newParser()
		if n := p.Next(in, &r); n == 0 {
			need := p.NeedBytes()
			if need == 0 || need > len(in)+100 {
				continue
			}
			in = append(in, bytes.Repeat([]byte("d"), need-len(in)-2)...)
			in = append(in, []string{"\r\n", "XX", "\r\r", "\n\n"}[rng.IntN(4)]...)
			in = append(in, "\r\n"...) // a line to read if the end was wrong
		} else if r.Cmd == CmdError && r.Err.Kind == ErrTooLarge {
			continue // the swallow would take gigabytes
		} else if rng.IntN(2) == 0 {
			in = append(in, "x\r\n"...)
		}

		// The replies the parse alone determines.
		p = newParser()
		var want []byte
		errorsOnly := true
		var set *Request
		for rest := in; len(rest) > 0; {
			var r Request
			n := p.Next(rest, &r)
			if n == 0 {
				t.Fatalf("case %q: parser wants more input", in)
			}
			rest = rest[n:]
			switch {
			case r.Cmd == CmdError:
				e := r.Err
				if e.Was1618 != nil {
					e = e.Was1618
				}
				if p.swallow > 0 && e.Kind != ErrTooLarge {
					// "swallow rejected data": 1.6.18 reads the data
					// block of a refused storage line as commands.
					p.swallow = 0
				}
				if !(e.Silent && r.Noreply) {
					want = AppendError(want, e)
				}
			case r.Cmd == CmdSet && set == nil && r.Exptime >= 0 && r.Exptime <= 2592000:
				set = &r
				errorsOnly = false
			case r.Cmd != CmdNone:
				errorsOnly = false
			}
		}
		var wantGet []byte
		if set != nil {
			wantGet = append(AppendValue(nil, set.Key, set.Flags, set.Data), RespEnd...)
			in = append(append(append(in, "get "...), set.Key...), "\r\n"...)
			sets++
		}

		// "mn" answers "MN" once everything before it is answered.
		if _, err := conn.Write(append(in, "mn\r\n"...)); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for !bytes.HasSuffix(got, []byte("MN\r\n")) {
			conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard: mn ends the reply
			k, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("case %q: %v after %q (memcached waits for more input?)", in, err, got)
			}
			got = append(got, buf[:k]...)
		}
		got = got[:len(got)-len("MN\r\n")]
		if errorsOnly {
			compared++
			if !bytes.Equal(got, want) {
				t.Errorf("case %q:\nmemcached %q\n   parser %q", in, got, want)
			}
		}
		if set != nil && !bytes.HasSuffix(got, wantGet) {
			t.Errorf("case %q:\nmemcached %q\nwant it to end in %q", in, got, wantGet)
		}
	}
	t.Logf("%d error-only cases compared, %d accepted sets checked", compared, sets)
}

// extraTokens1618 reports whether memcached 1.6.18 refused line for its
// token count where 1.6.45 reads the tokens it needs and ignores the rest
// (newer.go: extra tokens), or answered a gat with its exptime only END
// where 1.6.45 refuses it (too few tokens): the parser cannot tell what
// 1.6.18 did with the rest of such a case.
func extraTokens1618(line string) bool {
	var toks []string
	for _, t := range strings.Split(line, " ") {
		if t != "" {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return false
	}
	n := len(toks)
	switch toks[0] {
	case "set", "add", "replace", "append", "prepend":
		return n > 6
	case "cas":
		return n > 7
	case "incr", "decr", "touch":
		return n > 4
	case "gat", "gats":
		return n == 2
	}
	return false
}
