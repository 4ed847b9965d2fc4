package protocol

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestZZDiff(t *testing.T) {
	addr := os.Getenv("MCADDR")
	if addr == "" {
		t.Skip()
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cmds := []string{"get", "gets", "gat", "gats", "bget", "set", "add", "replace", "append", "prepend", "cas",
		"delete", "incr", "decr", "touch", "stats", "mx", "GET", "g", "ge", "sets", "x"}
	args := []string{"dz:none", "dz:none", "dz:none", "noreply", "noreply", "0", "0", "-0", "-1", "1", "2", "00", "abc", "4294967296",
		"18446744073709551615", "18446744073709551616", "-18446744073709551615", "+5", "\t5", "5\t-", "5x",
		strings.Repeat("k", 251), strings.Repeat("k", 250), "1\r", "NOREPLY", "0\x00x", "\x00", "-", "+", "\v7", "-9223372036854775808",
		"9223372036854775807", "4294967297", "2147483645", "2147483648", "-2147483649", "99999999999999999999"}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	buf := make([]byte, 1<<16)
	compared, skipped, setsChecked := 0, 0, 0
	for i := 0; i < 30000; i++ {
		var b strings.Builder
		if rng.IntN(5) == 0 {
			b.WriteString(" ")
		}
		b.WriteString(cmds[rng.IntN(len(cmds))])
		for range rng.IntN([]int{4, 8, 30}[rng.IntN(3)]) {
			b.WriteString(strings.Repeat(" ", 1+rng.IntN(2)))
			b.WriteString(args[rng.IntN(len(args))])
		}
		if rng.IntN(3) == 0 {
			b.WriteString(" ")
		}
		if rng.IntN(4) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString("\r\n")
		}
		line := b.String()
		if rng.IntN(2) == 0 {
			nums := []string{"0", "-0", "1", "+5", "\t5", "5\t-", "4294967296", "4294967295", "18446744073709551615",
				"-18446744073709551615", "-1", "\v7", "4294967297", "1\r", "00012", "+0", "2592000", "3"}
			lens := []string{"0", "1", "3", "-0", "+3", "\t2", "2\t-x", "4294967299", "3\r", "00003"}
			line = "set dz:k" + string(rune('a'+rng.IntN(26))) + " " + nums[rng.IntN(len(nums))] + " " +
				nums[rng.IntN(len(nums))] + " " + lens[rng.IntN(len(lens))] + []string{"", " noreply", " x", " "}[rng.IntN(4)] + "\r\n"
		}
		// Decide the data block from our own parse of the line.
		p := NewParser(1 << 20)
		p.SetItemSizeMax(1<<20, true)
		var r Request
		in := []byte(line)
		n := p.Next(in, &r)
		if n == 0 {
			need := p.NeedBytes()
			if need == 0 || need > len(in)+100 {
				skipped++
				continue
			}
			data := bytes.Repeat([]byte("d"), need-len(in)-2)
			end := []string{"\r\n", "XX", "\r\r", "\n\n"}[rng.IntN(4)]
			in = append(append(in, data...), end...)
			in = append(in, "\r\n"...) // in case the end is wrong: one more line
		} else if r.Cmd == CmdError && r.Err.Kind == ErrTooLarge {
			skipped++
			continue
		} else if rng.IntN(2) == 0 {
			in = append(in, "x\r\n"...)
		}
		// Our reply when the case holds only errors.
		p = NewParser(1 << 20)
		p.SetItemSizeMax(1<<20, true)
		var want []byte
		known := true
		rest := in
		for len(rest) > 0 {
			n := p.Next(rest, &r)
			if n == 0 {
				t.Fatalf("case %q: incomplete", in)
			}
			rest = rest[n:]
			if r.Cmd == CmdError {
				if !(r.Err.Silent && r.Noreply) {
					want = AppendError(want, r.Err)
				}
			} else if r.Cmd != CmdNone {
				known = false
			}
		}
		// A set we accept must store what we parsed.
		p2 := NewParser(1 << 20)
		p2.SetItemSizeMax(1<<20, true)
		var r2 Request
		p2.Next(in, &r2)
		checkSet := r2.Cmd == CmdSet && r2.Exptime >= 0 && r2.Exptime <= 2592000 && !bytes.ContainsAny(r2.Key, "\r\n")
		var wantGet []byte
		if checkSet {
			wantGet = AppendValue(nil, r2.Key, r2.Flags, r2.Data)
			wantGet = append(wantGet, RespEnd...)
			in = append(in, "get "...)
			in = append(in, r2.Key...)
			in = append(in, "\r\n"...)
			known = false
			setsChecked++
		}
		conn.Write(append(in, "mn\r\n"...))
		var got []byte
		for !bytes.HasSuffix(got, []byte("MN\r\n")) {
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("case %q: read: %v (got %q)", in, err, got)
			}
			got = append(got, buf[:k]...)
		}
		got = got[:len(got)-4]
		if checkSet && !bytes.HasSuffix(got, wantGet) {
			t.Errorf("case %q:\n memcached %q\n want suffix %q", in, got, wantGet)
		}
		if known {
			compared++
			if !bytes.Equal(got, want) {
				t.Errorf("case %q:\n memcached %q\n parser    %q", in, got, want)
			}
		}
	}
	t.Logf("compared %d, skipped %d, sets checked %d", compared, skipped, setsChecked)
}
