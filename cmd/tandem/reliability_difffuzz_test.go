package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestDiffFuzz is the differential fuzzer: a seeded, bounded random stream
// of classic text commands (valid and malformed, pipelined in small
// batches) goes to tandem (every mode) and to the real memcached, and the
// replies must match byte for byte. CAS uniques differ between servers by
// design: they are masked in the comparison, a cas command gets each
// server's own unique for the same "version" of an item, and the two
// servers' uniques must map one to one.
//
// CI runs a fixed number of commands; run longer with e.g.
//
//	go test ./cmd/tandem -run TestDiffFuzz -tandem.difffuzz.n=200000 -tandem.difffuzz.seed=0 -timeout 1h
//
// A divergence is shrunk to the shortest suffix of the stream that still
// diverges after a flush_all and logged in transcript format; with
// -tandem.difffuzz.save it is appended to testdata/transcripts/difffuzz.txt,
// which TestTranscripts replays from then on.
var (
	diffFuzzN    = flag.Int("tandem.difffuzz.n", 3000, "commands per mode sent by TestDiffFuzz (-short: a third)")
	diffFuzzSeed = flag.Int64("tandem.difffuzz.seed", 1, "seed of TestDiffFuzz; 0 picks one from the clock (logged)")
	saveDiffFuzz = flag.Bool("tandem.difffuzz.save", false, "append divergences found by TestDiffFuzz to testdata/transcripts/difffuzz.txt")
)

// casHole marks where a cas command's unique goes; each server gets its own.
const casHole = "\x00CAS\x00"

// fuzzOp is one generated command.
type fuzzOp struct {
	text   string // request bytes, possibly holding casHole
	casKey string // key whose recorded unique fills the hole
	casAge int    // 0: the latest recorded unique of casKey; n: the n-th older one
	// alone: the command must be the only one of its batch, because
	// memcached 1.6.18 drops every reply still queued on the connection
	// when a get fails on a too-long key or when it closes on an overlong
	// line, so replies of commands pipelined before it are lost; tandem
	// keeps them (documented differences).
	alone bool
}

// casPair is the unique one item version has on each server.
type casPair struct{ tandem, memcached uint64 }

func TestDiffFuzz(t *testing.T) {
	n := *diffFuzzN
	if testing.Short() {
		n /= 3
	}
	seed := *diffFuzzSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d, %d commands per mode (rerun with -tandem.difffuzz.seed=%d)", seed, n, seed)
	forVariants(t, func(t *testing.T, v serverVariant) {
		// No LRU maintainer or crawler: their threads briefly hold item
		// references, and memcached writes a shrunk counter in place (padded
		// with spaces) only when nothing else holds the item, so they make
		// its replies racy.
		mc := testenv.StartMemcached(t, "-m", "1024", "-o", "no_lru_crawler,no_lru_maintainer")
		s := startServer(t, v.mode, append([]string{"-m", "1024", "-t", "2", "--workers", "2"}, v.extra...)...)
		runDiffFuzz(t, s.Addr, mc.Addr, seed, n)
	})
}

// fuzzPeer is one server's connection in the fuzzer.
type fuzzPeer struct {
	name string
	addr string
	c    net.Conn
	r    *replyReader
}

func (p *fuzzPeer) dial() error {
	if p.c != nil {
		p.c.Close()
	}
	c, err := net.DialTimeout("tcp", p.addr, hangGuard)
	if err != nil {
		return err
	}
	p.c, p.r = c, newReplyReader(c)
	return nil
}

// exchange writes req and the sentinel and reads until the sentinel's
// reply, a close, or the server swallows the input: it read every byte
// sent and stayed silent for a second (see settle). After a close or a
// swallow the connection is reopened, so the next batch starts clean.
func (p *fuzzPeer) exchange(req string) (reply string, closed bool, err error) {
	_ = p.c.SetWriteDeadline(time.Now().Add(hangGuard))
	if _, err := io.WriteString(p.c, req+sentinel); err != nil {
		return "", true, p.dial()
	}
	state, err := p.r.settle(endsWith(sentinelReply), time.Second)
	got := p.r.take()
	if err != nil {
		return string(got), false, err
	}
	if state == inSync {
		return string(got[:len(got)-len(sentinelReply)]), false, nil
	}
	// Both servers are expected to close or swallow alike.
	return string(got), state == closedConn, p.dial()
}

func runDiffFuzz(t *testing.T, tandemAddr, mcAddr string, seed int64, n int) {
	tp := &fuzzPeer{name: "tandem", addr: tandemAddr}
	mp := &fuzzPeer{name: "memcached", addr: mcAddr}
	for _, p := range []*fuzzPeer{tp, mp} {
		if err := p.dial(); err != nil {
			t.Fatal(err)
		}
		defer func() { p.c.Close() }() // the connection open at the end
	}
	g := newFuzzGen(seed)
	pairs := map[string][]casPair{} // per key, oldest first
	t2m := map[uint64]uint64{}
	m2t := map[uint64]uint64{}
	var history [][]fuzzOp
	sent := 0
	deadline := time.Now().Add(4 * time.Minute)
	for sent < n {
		if time.Now().After(deadline) {
			t.Logf("time bound reached after %d commands", sent)
			break
		}
		batch := g.batch()
		sent += len(batch)
		history = append(history, batch)
		treq, mreq := renderBatch(batch, pairs)
		tgot, tclosed, err := tp.exchange(treq)
		if err != nil {
			t.Fatalf("tandem: %v", err)
		}
		mgot, mclosed, err := mp.exchange(mreq)
		if err != nil {
			t.Fatalf("memcached: %v", err)
		}
		if maskCAS(tgot) != maskCAS(mgot) || tclosed != mclosed {
			t.Errorf("divergence after %d commands (seed %d): request %s\n tandem    %s (closed=%v)\n memcached %s (closed=%v)",
				sent, seed, quote(mreq), quote(tgot), tclosed, quote(mgot), mclosed)
			logKeys(t, tandemAddr, mcAddr, g.keys)
			shrinkDivergence(t, tandemAddr, mcAddr, history, seed)
			return
		}
		tv, mv := valueCAS(tgot), valueCAS(mgot)
		if len(tv) != len(mv) {
			t.Fatalf("VALUE lines differ in number: tandem %d, memcached %d", len(tv), len(mv))
		}
		for i := range tv {
			if tv[i].cas == 0 && mv[i].cas == 0 {
				continue
			}
			if m, ok := t2m[tv[i].cas]; ok && m != mv[i].cas {
				t.Fatalf("tandem unique %d of %q was memcached's %d before, now %d: uniques do not map one to one",
					tv[i].cas, tv[i].key, m, mv[i].cas)
			}
			if tc, ok := m2t[mv[i].cas]; ok && tc != tv[i].cas {
				t.Fatalf("memcached unique %d of %q was tandem's %d before, now %d: uniques do not map one to one",
					mv[i].cas, mv[i].key, tc, tv[i].cas)
			}
			t2m[tv[i].cas], m2t[mv[i].cas] = mv[i].cas, tv[i].cas
			ps := pairs[tv[i].key]
			if len(ps) == 0 || ps[len(ps)-1].tandem != tv[i].cas {
				pairs[tv[i].key] = append(ps, casPair{tv[i].cas, mv[i].cas})
			}
		}
	}
	t.Logf("%d commands in %d batches matched memcached", sent, len(history))
	// memcached keeps an item stored already expired (an absolute exptime in
	// the past, a negative one) or invalidated by flush_all in curr_items
	// until an access finds it; tandem drops it at once. One gets of every key
	// on both servers, compared like any batch, lets memcached find them, so
	// curr_items compares what both really hold (about 1 seed in 10 ended
	// with such an item untouched).
	req := "gets " + strings.Join(g.keys, " ") + "\r\n"
	tgot, _, terr := exchange(tandemAddr, req)
	mgot, _, merr := exchange(mcAddr, req)
	if terr != nil || merr != nil {
		t.Fatalf("the last gets: %v / %v", terr, merr)
	}
	if maskCAS(tgot) != maskCAS(mgot) {
		t.Errorf("the last gets of every key: tandem %s, memcached %s", quote(tgot), quote(mgot))
	}
	compareFuzzStats(t, tandemAddr, mcAddr)
}

// fuzzStats are the counters that must agree with memcached's after the
// same command stream: a counter drifting from memcached's (named in one
// place but not counted in another) shows up here. Not compared, because
// the caches differ on purpose for now: get_expired and get_flushed
// (memcached keeps an item stored already expired, or invalidated by
// flush_all, until an access finds it and counts it; tandem drops it at
// once, and the access is a plain miss).
var fuzzStats = []string{"cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta", "get_hits", "get_misses",
	"delete_misses", "delete_hits", "incr_misses", "incr_hits", "decr_misses",
	"decr_hits", "cas_misses", "cas_hits", "cas_badval", "touch_hits", "touch_misses", "store_too_large",
	"store_no_memory", "auth_cmds", "auth_errors", "curr_items", "total_items", "evictions"}

// compareFuzzStats compares the counters of both servers.
func compareFuzzStats(t *testing.T, tandemAddr, mcAddr string) {
	ts, terr := serverStats(tandemAddr, "")
	ms, merr := serverStats(mcAddr, "")
	if terr != nil || merr != nil {
		t.Fatalf("stats: %v / %v", terr, merr)
	}
	for _, name := range fuzzStats {
		if ts[name] != ms[name] {
			t.Errorf("stats %s after the same commands: tandem %s, memcached %s", name, ts[name], ms[name])
		}
	}
}

// renderBatch builds each server's request bytes, filling cas holes.
func renderBatch(batch []fuzzOp, pairs map[string][]casPair) (treq, mreq string) {
	var tb, mb strings.Builder
	for _, op := range batch {
		if op.casKey == "" {
			tb.WriteString(op.text)
			mb.WriteString(op.text)
			continue
		}
		p := casPair{1<<60 + 7, 1<<60 + 7} // never issued: no version seen yet
		if ps := pairs[op.casKey]; len(ps) > 0 {
			p = ps[max(0, len(ps)-1-op.casAge)]
		}
		tb.WriteString(strings.Replace(op.text, casHole, strconv.FormatUint(p.tandem, 10), 1))
		mb.WriteString(strings.Replace(op.text, casHole, strconv.FormatUint(p.memcached, 10), 1))
	}
	return tb.String(), mb.String()
}

// valueEntry is one VALUE line of a reply.
type valueEntry struct {
	key string
	cas uint64
}

// valueCAS lists the VALUE lines of a reply with their uniques (0 when the
// line has none), skipping data blocks.
func valueCAS(reply string) []valueEntry {
	var out []valueEntry
	for len(reply) > 0 {
		line, rest, found := strings.Cut(reply, "\r\n")
		if !found {
			break
		}
		reply = rest
		f := strings.Split(line, " ")
		if f[0] != "VALUE" || len(f) < 4 {
			continue
		}
		size, err := strconv.Atoi(f[3])
		if err != nil || size+2 > len(reply) {
			break
		}
		reply = reply[size+2:]
		e := valueEntry{key: f[1]}
		if len(f) == 5 {
			e.cas, _ = strconv.ParseUint(f[4], 10, 64)
		}
		out = append(out, e)
	}
	return out
}

// logKeys logs what each server holds for keys, to explain a divergence.
func logKeys(t *testing.T, tandemAddr, mcAddr string, keys []string) {
	req := "gets " + strings.Join(keys, " ") + "\r\n"
	tgot, _, terr := exchange(tandemAddr, req)
	mgot, _, merr := exchange(mcAddr, req)
	t.Logf("state after the divergence:\n tandem    %q (%v)\n memcached %q (%v)", tgot, terr, mgot, merr)
}

// shrinkDivergence looks for the shortest suffix of history that diverges
// on its own after a flush_all, on fresh connections, and reports it as a
// transcript case.
func shrinkDivergence(t *testing.T, tandemAddr, mcAddr string, history [][]fuzzOp, seed int64) {
	for k := 1; k <= len(history) && k <= 64; k *= 2 {
		suffix := history[len(history)-k:]
		var req strings.Builder
		req.WriteString("flush_all\r\n")
		for _, b := range suffix {
			for _, op := range b {
				if op.casKey != "" {
					t.Logf("shrinking stopped: the suffix of %d batches holds a cas with a server-specific unique", k)
					return
				}
				req.WriteString(op.text)
			}
		}
		tgot, tclosed, terr := exchange(tandemAddr, req.String())
		mgot, mclosed, merr := exchange(mcAddr, req.String())
		if terr != nil || merr != nil {
			t.Logf("shrinking stopped: %v / %v", terr, merr)
			return
		}
		if maskCAS(tgot) != maskCAS(mgot) || tclosed != mclosed {
			writeRegression(t, fmt.Sprintf("difffuzz seed %d: last %d batches", seed, k), req.String(), mgot, mclosed)
			return
		}
	}
	t.Logf("the divergence did not reproduce from a flushed server with up to 64 batches: it depends on earlier state")
}

// fuzzGen generates commands from a seeded source.
type fuzzGen struct {
	r    *rand.Rand
	keys []string
	now  int64
}

func newFuzzGen(seed int64) *fuzzGen {
	g := &fuzzGen{r: rand.New(rand.NewSource(seed)), now: time.Now().Unix()}
	for i := 0; i < 10; i++ {
		g.keys = append(g.keys, "f:"+strconv.Itoa(i))
	}
	g.keys = append(g.keys, "f:"+strings.Repeat("L", 248), "f:\x01\x7f\xff")
	return g
}

func (g *fuzzGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }
func (g *fuzzGen) chance(p float64) bool   { return g.r.Float64() < p }

func (g *fuzzGen) key() string {
	if g.chance(0.01) {
		return "f:" + strings.Repeat("X", 249) // 251 bytes: too long
	}
	return g.keys[g.r.Intn(len(g.keys))]
}

// exptime never yields a small positive TTL, which would make replies
// depend on timing: 0, already expired (negative or an absolute time in
// the past), or far in the future (relative or absolute).
func (g *fuzzGen) exptime() string {
	return g.pick("0", "0", "0", "-1", "100000", "1000000000", strconv.FormatInt(g.now+1_000_000, 10))
}

// flags returns flags, malformed ones only when bad is allowed.
func (g *fuzzGen) flags(bad bool) string {
	if !bad || g.chance(0.97) {
		return g.pick("0", "0", "1", "42", "4294967295", "65536")
	}
	return g.pick("4294967296", "-1", "abc", "99999999999999999999")
}

func (g *fuzzGen) value() string {
	switch x := g.r.Intn(20); {
	case x < 6:
		// No counter reaches 2^63: memcached 1.6.18 then reads past the item
		// (see the catalogue case "incr of a counter over 2^63 in a reused
		// slab chunk") and its answer depends on stale memory.
		return g.pick("0", "1", "7", "42", "007", " 5", "5 ", "9 9", "99999999999999999999", "-1", "-0", "+3",
			"12abc", "1\x002", strconv.FormatUint(g.r.Uint64()>>uint(24+g.r.Intn(40)), 10))
	case x < 7:
		return ""
	case x < 8:
		return strings.Repeat(string(rune('a'+g.r.Intn(26))), 1000+g.r.Intn(20000))
	case x < 9:
		return "line1\r\nline2\r\nVALUE f:0 0 1\r\nEND\r\n"
	default:
		b := make([]byte, 1+g.r.Intn(64))
		for i := range b {
			b[i] = byte(' ' + g.r.Intn(95))
		}
		return string(b)
	}
}

func (g *fuzzGen) noreply() string {
	if g.chance(0.1) {
		return " noreply"
	}
	return ""
}

// batch returns 1 to 4 commands to pipeline together.
func (g *fuzzGen) batch() []fuzzOp {
	ops := make([]fuzzOp, 0, 4)
	for n := 1 + g.r.Intn(4); len(ops) < n; {
		op := g.op()
		if op.alone {
			if len(ops) == 0 {
				return []fuzzOp{op}
			}
			continue
		}
		ops = append(ops, op)
	}
	return ops
}

func (g *fuzzGen) op() fuzzOp {
	switch x := g.r.Intn(100); {
	case x < 30:
		return g.storage()
	case x < 55:
		return g.retrieval()
	case x < 68:
		cmd := g.pick("incr", "decr")
		delta := g.pick("1", "1", "5", "0", "1000", "18446744073709551616", "abc", "-1",
			strconv.FormatUint(g.r.Uint64()>>uint(24+g.r.Intn(40)), 10))
		return fuzzOp{text: cmd + " " + g.key() + " " + delta + g.noreply() + "\r\n"}
	case x < 78:
		extra := ""
		if g.chance(0.1) {
			extra = g.pick(" 0", " 5", " 0 0")
		}
		return fuzzOp{text: "delete " + g.key() + extra + g.noreply() + "\r\n"}
	case x < 86:
		return fuzzOp{text: "touch " + g.key() + " " + g.exptime() + g.noreply() + "\r\n"}
	case x < 87:
		return fuzzOp{text: g.pick("flush_all", "flush_all 0", "flush_all noreply", "flush_all -1") + "\r\n"}
	case x < 88:
		return fuzzOp{text: g.pick("verbosity 1", "verbosity 0 noreply") + "\r\n"}
	default:
		// No line shorter than four bytes, no storage line with too few
		// tokens and none refused after its length parsed, no command with
		// too few or extra tokens, no leading spaces: tandem answers those
		// as newer memcached does (transcript.Differences), replayed by
		// TestTranscripts.
		return fuzzOp{text: g.pick("foo\r\n", "GET f:1\r\n", "cas f:1 0 0 x 2\r\nxx\r\n",
			"get   f:1  f:2 \r\n", "get f:1\n", "\x00\x00\r\n")}
	}
}

func (g *fuzzGen) storage() fuzzOp {
	cmd := g.pick("set", "set", "set", "add", "replace", "append", "prepend", "cas", "cas")
	data := g.value()
	key := g.key()
	declared := strconv.Itoa(len(data))
	// A malformed header makes the server read the data block as a command
	// line; a data block over 2048 bytes then closes the connection, and
	// memcached drops the replies it still had queued while tandem sends
	// them (a documented difference), so only short blocks get one.
	bad := len(data) < 2000
	badLen := false
	switch {
	case g.chance(0.003):
		data = strings.Repeat("z", 2_000_000) // over -I: swallowed
		declared = strconv.Itoa(len(data))
		bad = false
	case bad && len(data) >= 7 && g.chance(0.03):
		// A bad data chunk whose rest is read as a line of at least four
		// bytes (a shorter one is a difference from 1.6.18, see
		// transcript.Differences).
		declared = strconv.Itoa(len(data) - 4 - g.r.Intn(3))
	case bad && g.chance(0.01):
		declared = g.pick("-1", "abc", "99999999999999999999")
		badLen = true
	}
	// Only a header whose length does not parse has its data block read as
	// a command by every version: one refused after its length parsed (bad
	// flags, unique or key) has it swallowed by tandem as by memcached 1.6.45
	// and read by 1.6.18 (transcript.Differences, "swallow rejected data"),
	// replayed by TestTranscripts. So bad flags, uniques and keys come only
	// with a bad length.
	fl := g.flags(badLen)
	if bad && (len(data) < 2 || strings.HasSuffix(data, "\n")) {
		// A malformed header makes the data line a command: at least two
		// bytes, for the same reason.
		data += "zz"
		if !badLen { // a bad length stays bad ("-1" would parse)
			declared = strconv.Itoa(len(data))
		}
	}
	if !badLen && len(key) > 250 {
		key = g.keys[0]
	}
	line := cmd + " " + key + " " + fl + " " + g.exptime() + " " + declared
	op := fuzzOp{}
	if cmd == "cas" {
		switch x := g.r.Intn(10); {
		case x < 6:
			op.casKey, op.casAge = key, 0
		case x < 8:
			op.casKey, op.casAge = key, 1+g.r.Intn(3)
		case x < 9:
			line += " " + strconv.FormatUint(1<<60+uint64(g.r.Intn(1000)), 10) // never issued
		case badLen:
			line += " " + g.pick("abc", "-1", "x1")
		default:
			line += " 0"
		}
		if op.casKey != "" {
			line += " " + casHole
		}
	}
	// memcached 1.6.45 sends a bad length's error whatever noreply says,
	// 1.6.18 honoured it (transcript.Differences: strict numbers).
	if nr := g.noreply(); !badLen {
		line += nr
	}
	op.text = line + "\r\n" + data + "\r\n"
	// A large block goes alone: after a malformed command earlier in the
	// batch it could be read as an overlong line, see bad above.
	op.alone = !bad
	return op
}

func (g *fuzzGen) retrieval() fuzzOp {
	cmd := g.pick("get", "get", "get", "gets", "gets", "gat", "gats")
	var sb strings.Builder
	sb.WriteString(cmd)
	if cmd == "gat" || cmd == "gats" {
		sb.WriteString(" " + g.exptime())
	}
	alone := false
	for i := 1 + g.r.Intn(4); i > 0; i-- {
		k := g.key()
		alone = alone || len(k) > 250
		sb.WriteString(" " + k)
	}
	sb.WriteString("\r\n")
	return fuzzOp{text: sb.String(), alone: alone}
}
