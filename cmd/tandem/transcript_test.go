package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
	"github.com/tandemcache/tandem/protocol/transcript"
)

// TestTranscripts replays the transcripts recorded from memcached 1.6.18
// (protocol/testdata/transcripts, plus regressions found by the
// differential fuzzer in testdata/transcripts here) end to end against
// every tandem mode and against the real memcached. Each case runs on a
// fresh connection, cases one after another (flush_all cases clear the whole
// server). After the recorded reply a sentinel command proves that nothing
// else was sent and the stream is in sync, unless memcached closed.
func TestTranscripts(t *testing.T) {
	cases := loadAllTranscripts(t)
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		mc := testenv.StartMemcached(t)
		replayTranscripts(t, mc.Addr, cases, false)
	})
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-t", "2", "--workers", "2")
		replayTranscripts(t, s.Addr, cases, true)
		checkHealthy(t, s)
	})
}

// transcriptReference names a memcached binary (e.g. a 1.6.45 built from
// source) that TestTranscriptsReference replays every transcript case
// against, counting the cases whose reply is not the one tandem must send
// (the newest reply), to measure what is left of the differences.
var transcriptReference = flag.String("tandem.transcript.reference", "",
	"memcached binary to replay the transcripts against, counting replies that differ from tandem's expected ones")

// TestTranscriptsReference replays the transcripts against the memcached
// that -tandem.transcript.reference names and logs every case whose reply
// differs from the newest reply (what tandem sends), then their count. It
// measures, it does not fail on a difference: only the newest memcached is
// expected to match, and not every case records its reply, e.g.
//
//	go test ./cmd/tandem -run TestTranscriptsReference -v \
//		-tandem.transcript.reference=/opt/mc145/bin/memcached
func TestTranscriptsReference(t *testing.T) {
	if *transcriptReference == "" {
		t.Skip("no -tandem.transcript.reference binary")
	}
	cases := loadAllTranscripts(t)
	mc := testenv.StartMemcachedBinary(t, *transcriptReference)
	// The sentinel's reply names the reference's version.
	version, _, err := exchangeUntil(mc.Addr, sentinel, endsWith("\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, tc := range cases {
		got, wantState, err := replayCase(mc.Addr, tc, quietFor(swallowed), string(version))
		if err != nil {
			t.Logf("%s: %s: %v", tc.File, tc.Name, err)
			differ++
			continue
		}
		if got.reply != string(tc.Want()) || got.state != wantState {
			differ++
			t.Logf("%s: %s\n request %s\n     got %s (%v)\n  tandem %s (%v)", tc.File, tc.Name,
				quote(string(tc.Request())), quote(got.reply), got.state, quote(string(tc.Want())), wantState)
		}
	}
	t.Logf("%s: %d of %d transcript cases differ from tandem's expected reply", *transcriptReference, differ, len(cases))
}

func loadAllTranscripts(t *testing.T) []transcript.Case {
	t.Helper()
	cases, err := transcript.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Regressions found by TestDiffFuzz, in the same format.
	if paths, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txt")); len(paths) > 0 {
		more, err := transcript.LoadDir(filepath.Join("testdata", "transcripts"))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, more...)
	}
	if len(cases) == 0 {
		t.Fatal("no transcript cases")
	}
	return cases
}

// replayTranscripts replays cases on addr: tandem must send each case's
// newest reply (the differences from memcached 1.6.18 in
// transcript.Differences), memcached 1.6.18 its recorded one.
func replayTranscripts(t *testing.T, addr string, cases []transcript.Case, tandem bool) {
	start := time.Now()
	for _, tc := range cases {
		got, wantState, err := replayCase(addr, tc, 0, "")
		if err != nil {
			t.Errorf("%s: %s: %v", tc.File, tc.Name, err)
			continue
		}
		want := tc.Reply
		if tandem {
			want = tc.Want()
		}
		if got.reply != string(want) || got.state != wantState {
			t.Errorf("%s: %s\n request %s\n     got %s (%v)\n    want %s (%v)", tc.File, tc.Name,
				quote(string(tc.Request())), quote(got.reply), got.state, quote(string(want)), wantState)
		}
	}
	t.Logf("%d transcript cases replayed in %v", len(cases), time.Since(start).Round(time.Millisecond))
}

// replayCase sends tc's request to addr and returns what came back, with
// the stream state tc expects.
// A reference that keeps waiting for input (it swallows more than tandem)
// shows as swallowed after quiet of silence when quiet is short.
// The sentinel's reply is version ("" for sentinelReply).
func replayCase(addr string, tc transcript.Case, quiet time.Duration, version string) (conversation, streamState, error) {
	segs := make([]string, len(tc.Segments))
	for i, s := range tc.Segments {
		segs[i] = string(s)
	}
	wantState := inSync
	if tc.Close {
		wantState = closedConn
	}
	if quiet == 0 {
		quiet = quietFor(wantState)
	}
	if version == "" {
		version = sentinelReply
	}
	got, err := converseWith(addr, segs, nil, writeWhole, quiet, sentinel, version)
	return got, wantState, err
}

// writeRegression stores a divergence found by the differential fuzzer as a
// transcript case under testdata/transcripts (memcached's reply is the
// expected one), so that it is replayed by TestTranscripts from then on. It
// writes only when -tandem.difffuzz.save is set; otherwise the case is only
// logged.
func writeRegression(t *testing.T, name, req, mcReply string, mcClosed bool) {
	text := transcriptCase(name, req, mcReply, mcClosed)
	t.Logf("regression case (transcript format):\n%s", text)
	if !*saveDiffFuzz {
		return
	}
	dir := filepath.Join("testdata", "transcripts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "difffuzz.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + strings.TrimSpace(text) + "\n"); err != nil {
		t.Fatal(err)
	}
}
