package main

import (
	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol/transcript"

	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Protocol edges of issue #14, each run against tandem in every mode and
// against memcached.

// forServers runs f as a parallel subtest on tandem in every mode and on
// memcached, each started with extra (memcached skips when not installed).
func forServers(t *testing.T, extra []string, f func(t *testing.T, addr string)) {
	forModes(t, func(t *testing.T, mode string) {
		f(t, startServer(t, mode, extra...).Addr)
	})
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		f(t, testenv.StartMemcached(t, extra...).Addr)
	})
}

// TestMaliciousCommands is memcached's t/malicious-commands.t: an unknown
// command that looks like an HTTP request is hung up on without a byte of
// reply. Near misses are answered ERROR (END for a get).
func TestMaliciousCommands(t *testing.T) {
	forServers(t, nil, func(t *testing.T, addr string) {
		for _, line := range []string{"GET / HTTP/1.0", "PUT /asdf/asd/fasdfasdf/sadf HTTP/1.1", "DELETE HTTP/1.1"} {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(c, line+"\r\n"); err != nil {
				t.Fatal(err)
			}
			// Five seconds ought to be enough to get hung up on.
			n, err := c.Read(make([]byte, 24))
			c.Close()
			if n != 0 || err != io.EOF {
				t.Errorf("%q: read %d bytes, %v; want a hang-up (EOF)", line, n, err)
			}
		}
		for _, line := range []string{"get HTTP/1.1", "zz http/1.0", "watch HTTP/1.1"} {
			reply, closed, err := exchange(addr, line+"\r\n")
			if err != nil || closed || (reply != "ERROR\r\n" && reply != "END\r\n") {
				t.Errorf("%q: %q closed=%v %v; want an answer", line, reply, closed, err)
			}
		}
	})
	// Where memcached 1.6.45 answers otherwise than the installed 1.6.18
	// (transcript.Differences, "command name"; 1.6.18 answers ERROR to both),
	// tandem as 1.6.45: an unknown command honours a last noreply, and one
	// whose last token starts with HTTP/ is hung up on.
	forModes(t, func(t *testing.T, mode string) {
		addr := startServer(t, mode).Addr
		if reply, closed, err := exchange(addr, "zz HTTP/1.0 noreply\r\n"); err != nil || closed || reply != "" {
			t.Errorf("zz HTTP/1.0 noreply: %q closed=%v %v; want silence", reply, closed, err)
		}
		if reply, closed, err := exchange(addr, "mz HTTP/1.0\r\n"); err != nil || !closed || reply != "" {
			t.Errorf("mz HTTP/1.0: %q closed=%v %v; want a hang-up", reply, closed, err)
		}
	})
}

// metaCASMask hides CAS values, which differ between servers.
var metaCASMask = regexp.MustCompile(`( c|cas=)[0-9]+`)

// metaLastAccess finds me's la=, seconds since the item's last access.
var metaLastAccess = regexp.MustCompile(`la=([0-9]+)`)

// sameUpToLastAccessTick reports whether two me lines are equal but for la=
// values one second apart: the two servers' clocks tick at different
// moments, and a slow run (-race on a loaded machine) crosses a tick
// between a set and its me.
func sameUpToLastAccessTick(a, b string) bool {
	ma, mb := metaLastAccess.FindStringSubmatch(a), metaLastAccess.FindStringSubmatch(b)
	if ma == nil || mb == nil || metaLastAccess.ReplaceAllString(a, "la=") != metaLastAccess.ReplaceAllString(b, "la=") {
		return false
	}
	x, _ := strconv.Atoi(ma[1])
	y, _ := strconv.Atoi(mb[1])
	return x-y <= 1 && y-x <= 1
}

// TestMetaFlagsLikeMemcached sends every flag character, alone and with a
// token, to mg, ms, md and ma on tandem and memcached: replies (errors
// included) must match, except for the flags whose meaning is new since
// 1.6.18 (transcript.Differences), which the transcripts cover.
func TestMetaFlagsLikeMemcached(t *testing.T) {
	mc := testenv.StartMemcached(t)
	s := startServer(t, "inline")
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&*+-./:;<=>?@[]^_{|}~"
	templates := []string{"mg k %s\r\n", "mg k v %s\r\n", "ms k 1 %s\r\nx\r\n", "ms k 1 %s T0\r\nx\r\n", "md k %s\r\n", "ma n %s\r\n", "me k %s\r\n"}
	var req strings.Builder
	for _, ch := range chars {
		for _, tok := range []string{string(ch), string(ch) + "1", string(ch) + "abc"} {
			for _, tmpl := range templates {
				if transcript.IsNewMetaFlag(tmpl[:2], byte(ch)) {
					continue
				}
				// Each case on fresh items: the ones before must not matter.
				fmt.Fprintf(&req, "set k 0 0 1\r\nx\r\nset n 0 0 1\r\n5\r\n"+tmpl, tok)
			}
		}
	}
	tgot, tclosed, terr := exchange(s.Addr, req.String())
	mgot, mclosed, merr := exchange(mc.Addr, req.String())
	if terr != nil || merr != nil {
		t.Fatalf("exchange: %v / %v", terr, merr)
	}
	tl := strings.Split(metaCASMask.ReplaceAllString(tgot, "${1}<cas>"), "\r\n")
	ml := strings.Split(metaCASMask.ReplaceAllString(mgot, "${1}<cas>"), "\r\n")
	for i := 0; i < len(tl) && i < len(ml); i++ {
		if tl[i] != ml[i] && !sameUpToLastAccessTick(tl[i], ml[i]) {
			t.Fatalf("replies differ at line %d: tandem %q, memcached %q", i, tl[i], ml[i])
		}
	}
	if len(tl) != len(ml) || tclosed != mclosed {
		t.Fatalf("tandem gave %d lines (closed %v), memcached %d (closed %v)", len(tl), tclosed, len(ml), mclosed)
	}
	if !strings.Contains(tgot, "CLIENT_ERROR invalid flag") {
		t.Errorf("no flag was refused")
	}
}

// TestMetaDebugLikeMemcached compares me on fresh items: every field,
// including la=, matches memcached's (CAS aside). (After a fetch, la=
// differs: memcached moves an item's access time only on its second fetch;
// see docs/protocol.md.)
func TestMetaDebugLikeMemcached(t *testing.T) {
	// A token after the b: memcached 1.6.45 decodes the key only then
	// (transcript.Differences, me b), 1.6.18 either way.
	req := "set a 5 0 3\r\nabc\r\nset bb 0 0 1\r\nx\r\nme a\r\nme bb\r\nme zz\r\nme YWJj b x\r\nset abc 0 0 1\r\n1\r\nme YWJj b x\r\n"
	mc := testenv.StartMemcached(t)
	want, _, err := exchange(mc.Addr, req)
	if err != nil {
		t.Fatal(err)
	}
	want = metaCASMask.ReplaceAllString(want, "${1}<cas>")
	forModes(t, func(t *testing.T, mode string) {
		reply, _, err := exchange(startServer(t, mode).Addr, req)
		if got := metaCASMask.ReplaceAllString(reply, "${1}<cas>"); err != nil || got != want {
			t.Fatalf("got %q (%v)\nwant %q (memcached)", got, err, want)
		}
	})
}

// TestLastAccessAfterOneFetch checks memcached's rule for the last-access
// time that `me` (la=) and `mg` (l) report: the first fetch of an item only
// marks it fetched, so after a store, a wait and one get both still show the
// time since the store. The check runs against memcached too.
func TestLastAccessAfterOneFetch(t *testing.T) {
	mc := testenv.StartMemcached(t)
	servers := map[string]string{"memcached": mc.Addr}
	for _, mode := range []string{"pool", "inline", "goroutine"} {
		servers[mode] = startServer(t, mode).Addr
	}
	for name, addr := range servers {
		if got, _, err := exchange(addr, "set k 0 0 1\r\nx\r\n"); err != nil || got != "STORED\r\n" {
			t.Fatalf("%s: set: %q %v", name, got, err)
		}
	}
	time.Sleep(2100 * time.Millisecond) // both clocks tick once a second
	la := regexp.MustCompile(`(?s)^VALUE k 0 1\r\nx\r\nEND\r\nME k exp=-1 la=(\d+) cas=\d+ fetch=yes cls=1 size=\d+\r\nHD l(\d+)\r\n$`)
	for name, addr := range servers {
		got, _, err := exchange(addr, "get k\r\nme k\r\nmg k l\r\n")
		m := la.FindStringSubmatch(got)
		if err != nil || m == nil {
			t.Fatalf("%s: %q %v", name, got, err)
		}
		if m[1] == "0" || m[2] == "0" {
			t.Errorf("%s: la=%s l%s after one fetch, want the seconds since the store (about 2)", name, m[1], m[2])
		}
	}
}
