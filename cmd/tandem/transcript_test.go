package main

import (
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
		segs := make([]string, len(tc.Segments))
		for i, s := range tc.Segments {
			segs[i] = string(s)
		}
		wantState := inSync
		if tc.Close {
			wantState = closedConn
		}
		got, err := converse(addr, segs, nil, writeWhole, quietFor(wantState))
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
