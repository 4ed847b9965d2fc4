package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Key dumps ("lru_crawler metadump", "stats cachedump") end to end, against
// memcached 1.6.18 and with the tools operators run: libmemcached's memcdump
// and memcached's memcached-tool.

// dumpKeys cover memcached's key encoding in metadump: unreserved bytes,
// reserved ones, an already percent-encoded key, UTF-8.
var dumpKeys = []string{"plain", "a/b%c~-._", "key:with:colons", "a+b=c&d?e#f", "a%20", "\xc3\xbc-utf8", "UPPER_lower.09"}

// dumpSetup stores dumpKeys (flags 3), one key with a TTL, one stored with a
// base64 key (its bytes are not text), and fetches "plain".
func dumpSetup() string {
	var b strings.Builder
	for _, k := range dumpKeys {
		fmt.Fprintf(&b, "set %s 3 0 1\r\nx\r\n", k)
	}
	b.WriteString("set ttl 0 1000 2\r\nhi\r\nms AAEC/w== 2 b\r\nhi\r\nget plain\r\n")
	return b.String()
}

// metadump sends "lru_crawler metadump <arg>" on a fresh connection and
// returns the reply: the dump's lines end in a bare "\n", so the reply is
// complete at the first "\r\n" (END or an error line).
func metadump(t *testing.T, addr, arg string) string {
	t.Helper()
	got, _, err := exchangeUntil(addr, "lru_crawler metadump "+arg+"\r\n", endsWith("\r\n"))
	if err != nil {
		t.Fatalf("metadump %s: %v", arg, err)
	}
	return string(got)
}

var metadumpLine = regexp.MustCompile(`^key=(\S+) exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) size=(\d+)$`)

// normalMetadump returns a dump's lines, sorted, with what differs between
// two servers by design masked: the class and size (tandem's classes are
// shards, its sizes its own accounting) and the times, kept as the TTL
// left (exp minus la). It fails on a line not in memcached's format.
func normalMetadump(t *testing.T, reply string) []string {
	t.Helper()
	body, ok := strings.CutSuffix(reply, "END\r\n")
	if !ok {
		t.Fatalf("metadump does not end in END: %s", quote(reply))
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if l == "" {
			continue
		}
		m := metadumpLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("metadump line not in memcached's format: %q", l)
		}
		exp, _ := strconv.ParseInt(m[2], 10, 64)
		la, _ := strconv.ParseInt(m[3], 10, 64)
		ttl := "never"
		if exp != -1 {
			ttl = strconv.FormatInt(exp-la, 10)
		}
		lines = append(lines, fmt.Sprintf("key=%s ttl=%s cas=%s fetch=%s", m[1], ttl, m[4], m[5]))
	}
	slices.Sort(lines)
	return lines
}

// awaitMemcachedDump polls memcached until a dump has n lines: memcached
// links new items into the lists its dumps walk in the background, and
// answers "BUSY currently processing crawler request" while its crawler is
// still busy with an earlier run.
func awaitMemcachedDump(t *testing.T, n int, dump func() []string) []string {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		lines := dump()
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// memcachedMetadump is normalMetadump of memcached's "all" dump, or nil
// while memcached's crawler is busy with an earlier run, for
// awaitMemcachedDump to poll.
func memcachedMetadump(t *testing.T, addr string) []string {
	t.Helper()
	reply := metadump(t, addr, "all")
	if strings.HasPrefix(reply, "BUSY ") {
		return nil
	}
	return normalMetadump(t, reply)
}

// TestMetadumpLikeMemcached checks "lru_crawler metadump all" and "hash"
// line by line against memcached: key encoding, TTL, CAS and fetch flag.
func TestMetadumpLikeMemcached(t *testing.T) {
	mc := testenv.StartMemcached(t)
	if _, _, err := exchange(mc.Addr, dumpSetup()); err != nil {
		t.Fatal(err)
	}
	n := len(dumpKeys) + 2
	want := awaitMemcachedDump(t, n, func() []string { return memcachedMetadump(t, mc.Addr) })
	if len(want) != n {
		t.Fatalf("memcached dumps %d items, want %d: %q", len(want), n, want)
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		if _, _, err := exchange(s.Addr, dumpSetup()); err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{"all", "hash"} {
			if got := normalMetadump(t, metadump(t, s.Addr, arg)); !slices.Equal(got, want) {
				t.Errorf("metadump %s:\n tandem    %q\n memcached %q", arg, got, want)
			}
		}
	})
}

// TestMetadumpRepliesLikeMemcached checks the replies to bad arguments
// against memcached's, byte for byte. (A list of valid class ids dumps
// those classes; ids name memcached's slab classes there and tandem's
// shards here, so their dumps are not compared.)
func TestMetadumpRepliesLikeMemcached(t *testing.T) {
	cmds := []string{
		"lru_crawler metadump 0", "lru_crawler metadump x", "lru_crawler metadump -1",
		"lru_crawler metadump 1,x", "lru_crawler metadump all,1", "lru_crawler metadump ALL",
		"lru_crawler metadump 200", "lru_crawler metadump 18446744073709551615",
		"lru_crawler metadump", "lru_crawler metadump all extra", "lru_crawler", "lru_crawler bogus",
		// Last: memcached's crawler refuses every metadump after this one.
		"lru_crawler metadump ,",
	}
	ask := func(addr, cmd string) string {
		got, _, err := exchangeUntil(addr, cmd+"\r\n", endsWith("\r\n"))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return string(got)
	}
	mc := testenv.StartMemcached(t)
	want := make([]string, len(cmds))
	for i, cmd := range cmds {
		want[i] = ask(mc.Addr, cmd)
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		for i, cmd := range cmds {
			if got := ask(s.Addr, cmd); got != want[i] {
				t.Errorf("%s:\n tandem    %q\n memcached %q", cmd, got, want[i])
			}
		}
	})
}

// loadKeys stores "<prefix><i>" = "x" for i < n on addr in one pipelined,
// noreply stream, fenced by version.
func loadKeys(t *testing.T, addr, prefix string, n int) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "set %s%d 0 0 1 noreply\r\nx\r\n", prefix, i)
	}
	if got, _, err := exchange(addr, b.String()); err != nil || got != "" {
		t.Fatalf("loading %d keys: %v %s", n, err, quote(got))
	}
}

// sortedLines splits out into lines, sorted.
func sortedLines(out string) []string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

// TestMemcdumpLikeMemcached runs libmemcached's memcdump (stats cachedump
// over every class until the server says the class id is illegal) against
// memcached and tandem: the same keys, the base64 one left out.
func TestMemcdumpLikeMemcached(t *testing.T) {
	tool := testenv.NeedTool(t, "memcdump", "libmemcached-tools")
	const n = 300
	setup := func(addr string) {
		if _, _, err := exchange(addr, dumpSetup()); err != nil {
			t.Fatal(err)
		}
		loadKeys(t, addr, "k", n)
	}
	memcdump := func(addr string) []string {
		out, stderr, code := runCommand(t, tool, "--servers="+addr)
		if code != 0 {
			t.Fatalf("memcdump exit %d: %s", code, stderr)
		}
		return sortedLines(out)
	}
	mc := testenv.StartMemcached(t)
	setup(mc.Addr)
	total := n + len(dumpKeys) + 1
	want := awaitMemcachedDump(t, total, func() []string { return memcdump(mc.Addr) })
	if len(want) != total {
		t.Fatalf("memcdump lists %d keys of memcached, want %d", len(want), total)
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		setup(s.Addr)
		if got := memcdump(s.Addr); !slices.Equal(got, want) {
			t.Errorf("memcdump: tandem lists %d keys, memcached %d\n tandem    %q\n memcached %q",
				len(got), len(want), got[:min(len(got), 20)], want[:min(len(want), 20)])
		}
	})
}

// TestMemcdumpDisabledLikeMemcached runs memcdump against -X.
func TestMemcdumpDisabledLikeMemcached(t *testing.T) {
	tool := testenv.NeedTool(t, "memcdump", "libmemcached-tools")
	mask := regexp.MustCompile(`\(0x[0-9a-f]+\)|127\.0\.0\.1:\d+`)
	run := func(addr string) string {
		out, stderr, code := runCommand(t, tool, "--servers="+addr)
		return fmt.Sprintf("exit %d, stdout %q, stderr %q", code, out, mask.ReplaceAllString(stderr, "<>"))
	}
	want := run(testenv.StartMemcached(t, "-X").Addr)
	if !strings.Contains(want, "not allowed") {
		t.Fatalf("memcached -X: %s", want)
	}
	forModes(t, func(t *testing.T, mode string) {
		if got := run(startServer(t, mode, "-X").Addr); got != want {
			t.Errorf("memcdump against -X:\n tandem    %s\n memcached %s", got, want)
		}
	})
}

// memcachedTool is the path of memcached's memcached-tool script, shipped
// with Debian's memcached package.
func memcachedTool(t *testing.T) string {
	t.Helper()
	const path = "/usr/share/memcached/scripts/memcached-tool"
	testenv.NeedTool(t, "memcached", "memcached")
	testenv.NeedTool(t, "perl", "perl")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("memcached is installed but %s is missing: %v", path, err)
	}
	return path
}

// TestMemcachedToolDumpLikeMemcached runs "memcached-tool <addr> dump"
// (lru_crawler metadump all, then a get per key, printed as add commands)
// and "keys" against memcached and tandem.
func TestMemcachedToolDumpLikeMemcached(t *testing.T) {
	tool := memcachedTool(t)
	const n = 200
	setup := func(addr string) {
		var b strings.Builder
		for _, k := range dumpKeys {
			fmt.Fprintf(&b, "set %s 3 0 1\r\nx\r\n", k)
		}
		if _, _, err := exchange(addr, b.String()); err != nil {
			t.Fatal(err)
		}
		loadKeys(t, addr, "k", n)
	}
	// dump returns the add commands memcached-tool prints, sorted.
	dump := func(addr string) []string {
		out, stderr, code := runCommand(t, tool, addr, "dump")
		if code != 0 {
			t.Fatalf("memcached-tool dump exit %d: %s", code, stderr)
		}
		var adds []string
		for rec := range strings.SplitSeq(out, "\r\nadd ") {
			if rec = strings.TrimPrefix(strings.TrimSpace(rec), "add "); rec != "" {
				adds = append(adds, rec)
			}
		}
		slices.Sort(adds)
		return adds
	}
	keys := func(addr string) int {
		out, stderr, code := runCommand(t, tool, addr, "keys")
		if code != 0 {
			t.Fatalf("memcached-tool keys exit %d: %s", code, stderr)
		}
		return strings.Count(out, "key=")
	}
	mc := testenv.StartMemcached(t)
	setup(mc.Addr)
	total := n + len(dumpKeys)
	want := awaitMemcachedDump(t, total, func() []string { return dump(mc.Addr) })
	if len(want) != total {
		t.Fatalf("memcached-tool dumps %d keys of memcached, want %d", len(want), total)
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		setup(s.Addr)
		if got := dump(s.Addr); !slices.Equal(got, want) {
			t.Errorf("memcached-tool dump: tandem %d records, memcached %d\n tandem    %q\n memcached %q",
				len(got), len(want), got[:min(len(got), 10)], want[:min(len(want), 10)])
		}
		if got := keys(s.Addr); got != total {
			t.Errorf("memcached-tool keys lists %d keys, want %d", got, total)
		}
	})
}

// TestMetadumpLarge dumps tens of thousands of keys in every mode while
// another client works, checks every key comes once, then drops a
// connection in the middle of a dump and checks the server carries on.
func TestMetadumpLarge(t *testing.T) {
	const n = 60000
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		loadKeys(t, s.Addr, "key:", n)

		// A client doing gets while the dump runs gets right answers.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var clientErr error
		getter := dial(t, s.Addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := getter
			r := bufio.NewReader(c)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := "key:" + strconv.Itoa(i%n)
				want := "VALUE " + k + " 0 1\r\nx\r\nEND\r\n"
				if _, err := io.WriteString(c, "get "+k+"\r\n"); err != nil {
					clientErr = err
					return
				}
				got := make([]byte, len(want))
				if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
					clientErr = fmt.Errorf("get %s: %q, %v", k, got, err)
					return
				}
			}
		}()
		reply := metadump(t, s.Addr, "all")
		close(stop)
		wg.Wait()
		if clientErr != nil {
			t.Fatalf("concurrent client: %v", clientErr)
		}
		seen := make(map[string]bool, n)
		for _, l := range strings.Split(strings.TrimSuffix(reply, "\nEND\r\n"), "\n") {
			k, _, _ := strings.Cut(strings.TrimPrefix(l, "key="), " ")
			if seen[k] {
				t.Fatalf("key %q dumped twice", k)
			}
			seen[k] = true
		}
		for i := range n {
			if k := "key%3A" + strconv.Itoa(i); !seen[k] {
				t.Fatalf("key %q not dumped (%d lines)", k, len(seen))
			}
		}

		// A client that leaves in the middle of a dump.
		c := dial(t, s.Addr)
		if _, err := io.WriteString(c, "lru_crawler metadump all\r\n"); err != nil {
			t.Fatal(err)
		}
		if got := readN(t, c, 4096); len(got) != 4096 {
			t.Fatalf("dump cut short: %d bytes", len(got))
		}
		c.Close()
		checkHealthy(t, s)
		if got, _, err := exchange(s.Addr, "get key:1\r\n"); err != nil || got != "VALUE key:1 0 1\r\nx\r\nEND\r\n" {
			t.Fatalf("after a dropped dump: %q %v", got, err)
		}
	})
}

// TestMetadumpStreams dumps more than handler.DumpLimit (16 MiB) in every
// mode, with a `version` pipelined after it, to a client that first reads
// nothing for a while and then reads slowly: the dump is streamed in parts
// (the server stops producing it while the client does not read, so its
// memory does not grow by the dump's size), every key comes once, END and
// the version reply follow, and the connection stays usable.
func TestMetadumpStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 200,000 keys per mode")
	}
	const n = 200000
	forVariants(t, func(t *testing.T, v serverVariant) {
		s := startServer(t, v.mode, v.extra...)
		loadKeys(t, s.Addr, "a-rather-long-key-prefix-to-fill-the-dump:", n)
		before, err := readPeakRSS(s.pid())
		if err != nil {
			t.Fatal(err)
		}
		c := dial(t, s.Addr)
		if _, err := io.WriteString(c, "lru_crawler metadump all\r\nversion\r\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // a reader that reads nothing for a while
		r := bufio.NewReaderSize(c, 4096)
		size, lines := 0, 0
		seen := make(map[string]bool, n)
		for {
			_ = c.SetReadDeadline(time.Now().Add(hangGuard))
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d lines: %v", lines, err)
			}
			size += len(l)
			if l == "END\r\n" {
				break
			}
			k, _, _ := strings.Cut(strings.TrimPrefix(l, "key="), " ")
			if seen[k] {
				t.Fatalf("key %q dumped twice", k)
			}
			seen[k] = true
			if lines++; lines < 20000 && lines%500 == 0 {
				time.Sleep(time.Millisecond) // slowly at first
			}
		}
		if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "VERSION ") {
			t.Fatalf("after the dump: %q %v", l, err)
		}
		if size <= 16<<20 || lines != n {
			t.Fatalf("dump of %d bytes, %d lines: want all %d keys, past 16 MiB", size, lines, n)
		}
		after, err := readPeakRSS(s.pid())
		if err != nil {
			t.Fatal(err)
		}
		// Not streamed, the reply alone would add its 22 MB (36 MB to build).
		if grew := after - before; grew > 16<<20 {
			t.Errorf("peak RSS grew by %d MiB during a %d MiB dump", grew>>20, size>>20)
		}
		t.Logf("%d keys, %d MiB dumped; peak RSS %d -> %d MiB", lines, size>>20, before>>20, after>>20)
		checkHealthy(t, s)
	})
}
