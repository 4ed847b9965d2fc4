package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// metaPipeline builds n random meta commands on a few keys, mostly quiet,
// ending in mn, from flags whose replies do not depend on CAS ids or access
// times (TTLs are read within the second they are set, give or take the one
// tick sameUpToTTLTick allows between the two servers).
//
// Counters (ma) get keys of their own: memcached rewrites a number in place
// only while no queued reply still references the item, and otherwise links
// a new item (exact digits, fetched/stale state reset), so mixing ma with
// mg hits on one key in one pipeline depends on its write timing; tandem
// always rewrites in place, as memcached does when replies were sent.
func metaPipeline(rng *rand.Rand, prefix string, n int) string {
	keys := []string{prefix + "a", prefix + "b", prefix + "c", prefix + "d"}
	counters := []string{prefix + "n1", prefix + "n2"}
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	flags := func(opts ...string) string {
		var b strings.Builder
		seen := map[byte]bool{}
		for range rng.IntN(5) {
			f := pick(opts...)
			if seen[f[0]] {
				continue
			}
			seen[f[0]] = true
			b.WriteString(" " + f)
		}
		return b.String()
	}
	num := func() string { return fmt.Sprint(rng.IntN(200)) }
	var b strings.Builder
	for range n {
		key := pick(keys...)
		switch rng.IntN(9) {
		case 0, 1, 2:
			fmt.Fprintf(&b, "mg %s%s\r\n", key, flags("v", "s", "f", "k", "O"+num(), "q", "t", "T"+num(), "N"+num(), "R"+num(), "u", "h"))
		case 3, 4:
			v := pick("1", "22", "abc", "", "18446744073709551615")
			fmt.Fprintf(&b, "ms %s %d%s\r\n%s\r\n", key, len(v), flags("T"+num(), "F"+num(), "q", "O"+num(), "k", "MS", "ME", "MA", "MP", "MR", "I", "C0"), v)
		case 5:
			fmt.Fprintf(&b, "md %s%s\r\n", key, flags("q", "O"+num(), "k", "I", "T"+num(), "C0"))
		case 6, 7:
			fmt.Fprintf(&b, "ma %s%s\r\n", pick(counters...), flags("N"+num(), "J"+num(), "D"+num(), "MI", "MD", "q", "v", "t", "O"+num(), "k", "T"+num()))
		default:
			b.WriteString("mn\r\n")
		}
	}
	b.WriteString("mn\r\n")
	return b.String()
}

// TestMetaPipelineDifferential sends random pipelines of meta commands in
// quiet mode, each ending in mn, to tandem (every mode) and to memcached in
// one write each, and compares the replies byte for byte. With
// TANDEM_META_DUMP=<path> a failing pipeline is written to <path>.<mode>
// for replaying step by step.
func TestMetaPipelineDifferential(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		mcd := testenv.StartMemcached(t)
		s := startServer(t, mode)
		rng := rand.New(rand.NewPCG(42, uint64(len(mode))))
		for round := range 40 {
			req := metaPipeline(rng, fmt.Sprintf("mp%d:", round), 60)
			want, wantClosed, err := exchange(mcd.Addr, req)
			if err != nil {
				t.Fatalf("memcached: %v", err)
			}
			got, gotClosed, err := exchange(s.Addr, req)
			if err != nil {
				t.Fatalf("tandem: %v", err)
			}
			if !sameUpToTTLTick(got, want) || gotClosed != wantClosed {
				if dump := os.Getenv("TANDEM_META_DUMP"); dump != "" {
					_ = os.WriteFile(dump+"."+mode, []byte(req), 0o644)
				}
				d := firstDiff(got, want)
				t.Fatalf("round %d: request %s\n differs at byte %d\n tandem    %s\n memcached %s", round, quote(req), d,
					quote(got[max(0, d-80):]), quote(want[max(0, d-80):]))
			}
		}
	})
}

// sameUpToTTLTick reports whether two meta replies are equal except for
// remaining-TTL flags (t<seconds>) that differ by one: each server reads its
// own clock, and a second may tick between the two exchanges of a round.
func sameUpToTTLTick(got, want string) bool {
	if got == want {
		return true
	}
	g, w := strings.Fields(got), strings.Fields(want)
	if len(g) != len(w) || strings.Count(got, "\r\n") != strings.Count(want, "\r\n") {
		return false
	}
	for i := range g {
		if g[i] == w[i] {
			continue
		}
		a, okA := ttlFlag(g[i])
		b, okB := ttlFlag(w[i])
		if !okA || !okB || a-b > 1 || b-a > 1 {
			return false
		}
	}
	return true
}

// ttlFlag parses a remaining-TTL flag with a TTL ("t158"; not "t-1").
func ttlFlag(tok string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(tok, "t"))
	return n, strings.HasPrefix(tok, "t") && err == nil && n >= 0
}

func TestSameUpToTTLTick(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		same      bool
	}{
		{"HD t158\r\n", "HD t158\r\n", true},
		{"HD t157\r\n", "HD t158\r\n", true},
		{"HD t159 f5\r\n", "HD t158 f5\r\n", true},
		{"HD t156\r\n", "HD t158\r\n", false},
		{"HD t-1\r\n", "HD t0\r\n", false},
		{"HD t158 f4\r\n", "HD t158 f5\r\n", false},
		{"HD t158\r\nEN\r\n", "HD t158 EN\r\n", false},
		{"VA 2 t9\r\nab\r\n", "VA 2 t9\r\nac\r\n", false},
	} {
		if got := sameUpToTTLTick(tc.got, tc.want); got != tc.same {
			t.Errorf("sameUpToTTLTick(%q, %q) = %v, want %v", tc.got, tc.want, got, tc.same)
		}
	}
}

// metaDiffCases are meta exchanges compared with memcached byte for byte,
// beyond the recorded transcripts (protocol/testdata/transcripts/meta.txt,
// replayed by TestTranscripts).
var metaDiffCases = []struct{ name, req string }{
	{"quiet sets then gets", "ms md1 2 q\r\nab\r\nms md2 2 q T0\r\ncd\r\nmg md1 q v k\r\nmg md3 q v k\r\nmg md2 q v k O7\r\nmn\r\n"},
	{"quiet errors are sent", "ms md4 2 q\r\nabcd\r\nmg md4 q ~\r\nma md4 q\r\nmn\r\n"},
	{"quiet arithmetic", "ma md5 q N0 J7\r\nma md5 q\r\nma md5 q v\r\nmg md5 v\r\nma md5 q MX\r\nmn\r\n"},
	{"stale then recache by cas", "ms md6 1\r\nx\r\nmd md6 I q\r\nmg md6 v\r\nmg md6 v\r\nms md6 1 C0 I\r\ny\r\nmg md6 v\r\nmn\r\n"},
	{"vivify then fill", "mg md7 N30 v\r\nmg md7 N30 v\r\nms md7 3 MR\r\nnew\r\nmg md7 v\r\n"},
	{"mixed with classic commands", "set md8 5 0 2\r\nab\r\nmg md8 v f\r\nms md8 2 F9\r\ncd\r\nget md8\r\nmd md8 q\r\nget md8\r\nmn\r\n"},
	{"binary key round trip", "ms bWQ5 b 2 k\r\nab\r\nmg bWQ5 b k v\r\nmg md9 k v\r\nmd bWQ5 b k\r\n"},
}

// TestMetaDifferential compares individual meta exchanges with memcached.
func TestMetaDifferential(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		mcd := testenv.StartMemcached(t)
		s := startServer(t, mode)
		for _, tc := range metaDiffCases {
			want, wantClosed, err := exchange(mcd.Addr, tc.req)
			if err != nil {
				t.Fatalf("%s: memcached: %v", tc.name, err)
			}
			got, gotClosed, err := exchange(s.Addr, tc.req)
			if err != nil {
				t.Fatalf("%s: tandem: %v", tc.name, err)
			}
			if got != want || gotClosed != wantClosed {
				t.Errorf("%s: request %s\n tandem    %s (closed=%v)\n memcached %s (closed=%v)",
					tc.name, quote(tc.req), quote(got), gotClosed, quote(want), wantClosed)
			}
		}
	})
}
