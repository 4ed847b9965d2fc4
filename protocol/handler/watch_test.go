package handler

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeConn stands for a connection's push: it records what is pushed and
// reports a queue the test sets.
type fakeConn struct {
	mu     sync.Mutex
	got    strings.Builder
	queued atomic.Int64
	pushed chan struct{} // gets a value after every non-empty push
}

func newFakeConn() *fakeConn { return &fakeConn{pushed: make(chan struct{}, 1024)} }

func (f *fakeConn) push(p []byte) (int, error) {
	if len(p) > 0 {
		f.mu.Lock()
		f.got.Write(p)
		f.mu.Unlock()
		f.pushed <- struct{}{}
	}
	return int(f.queued.Load()), nil
}

func (f *fakeConn) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.got.String()
}

// waitPushed waits (a hang guard, not a timing assertion) until the
// connection got a push whose text contains sub.
func (f *fakeConn) waitPushed(t *testing.T, sub string) string {
	t.Helper()
	guard := time.After(time.Minute)
	for !strings.Contains(f.String(), sub) {
		select {
		case <-f.pushed:
		case <-guard:
			t.Fatalf("no %q pushed; got %q", sub, f.String())
		}
	}
	return f.String()
}

// TestWatchCommandReplies checks watch's argument handling and refusals.
func TestWatchCommandReplies(t *testing.T) {
	tests := []struct {
		name, input string
		push        bool
		disable     bool
		want        string // what Execute returns
		pushed      string // what the connection got through push
	}{
		{name: "default", input: "watch\r\n", push: true, pushed: "OK\r\n"},
		{name: "flags", input: "watch fetchers mutations evictions connevents rawcmds sysevents proxyreqs\r\n", push: true, pushed: "OK\r\n"},
		{name: "unknown flag", input: "watch fetchers bogus\r\n", push: true, want: "ERROR\r\n"},
		{name: "noreply is no flag", input: "watch noreply\r\n", push: true, want: "ERROR\r\n"},
		{name: "disabled", input: "watch\r\n", push: true, disable: true, want: "CLIENT_ERROR watch commands not allowed\r\n"},
		{name: "pipelined", input: "version\r\nwatch\r\n", push: true, want: "VERSION 1.6.18\r\nERROR cannot pipeline other commands before watch\r\n"},
		{name: "no push", input: "watch\r\n", want: "WATCHER_FAILED failed to add log watcher\r\n"},
		{name: "silent after", input: "watch\r\nversion\r\nget a\r\n", push: true, pushed: "OK\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newTestHandler(t, func(c *Config) { c.DisableWatch = tc.disable })
			s := h.NewSession("127.0.0.1:5000")
			f := newFakeConn()
			if tc.push {
				s.SetPush(9, f.push)
			}
			got, _ := run(s, tc.input)
			if got != tc.want || f.String() != tc.pushed {
				t.Errorf("%q: returned %q, pushed %q; want %q and %q", tc.input, got, f.String(), tc.want, tc.pushed)
			}
			s.Close()
		})
	}
}

// TestWatchLimit checks memcached's limit of 20 watchers.
func TestWatchLimit(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	for i := range watcherLimit + 1 {
		s := h.NewSession("127.0.0.1:5000")
		f := newFakeConn()
		s.SetPush(i, f.push)
		got, _ := run(s, "watch\r\n")
		wantReply, wantPushed := "", "OK\r\n"
		if i == watcherLimit {
			wantReply, wantPushed = "WATCHER_TOO_MANY log watcher limit reached\r\n", ""
		}
		if got != wantReply || f.String() != wantPushed {
			t.Fatalf("watcher %d: replied %q, pushed %q; want %q and %q", i, got, f.String(), wantReply, wantPushed)
		}
		defer s.Close()
	}
	if n := h.Stats().LogWatchers; n != watcherLimit {
		t.Errorf("log_watchers = %d, want %d", n, watcherLimit)
	}
}

// TestWatchSkipsForSlowWatcher fills a watcher whose connection does not
// drain: lines beyond its buffer are skipped and counted, and once the
// connection drains the watcher is told how many with memcached's
// "skipped=N" line before the next one.
func TestWatchSkipsForSlowWatcher(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	w := h.NewSession("127.0.0.1:5000")
	f := newFakeConn()
	w.SetPush(3, f.push)
	run(w, "watch fetchers\r\n")
	defer w.Close()
	f.queued.Store(watcherBufSize + 1) // the peer reads nothing
	c := h.NewSession("127.0.0.1:5001")
	c.SetPush(4, newFakeConn().push)
	key := strings.Repeat("k", 200)
	lines := 0
	for h.Stats().LogWatcherSkipped == 0 {
		run(c, "get "+key+"\r\n")
		if lines++; lines > 10*watcherBufSize/200 {
			t.Fatal("no line skipped")
		}
	}
	// Once the connection drains, the watcher pushes the lines it holds;
	// only then is there room for the next line (asked before, it could be
	// skipped too, when the held lines leave less room than it needs).
	held := len(f.String())
	f.queued.Store(0)
	for guard := time.After(time.Minute); len(f.String()) == held; {
		select {
		case <-f.pushed:
		case <-guard:
			t.Fatal("the watcher did not push its lines once the connection drained")
		}
	}
	run(c, "get last\r\n")
	got := f.waitPushed(t, "key=last ")
	skipped := h.Stats().LogWatcherSkipped
	if !strings.Contains(got, "\nskipped="+strconv.FormatUint(skipped, 10)+"\n") {
		t.Errorf("no skipped=%d line before the next one:\n...%s", skipped, got[max(0, len(got)-600):])
	}
	if st := h.Stats(); st.LogWatcherSent+st.LogWatcherSkipped != uint64(lines)+1 {
		t.Errorf("sent %d + skipped %d != %d lines", st.LogWatcherSent, st.LogWatcherSkipped, lines+1)
	}
}

// TestWatchLines checks the format of every line type, the connection
// events included, as memcached's logger.c prints them.
func TestWatchLines(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	w := h.NewSession("127.0.0.1:5000")
	f := newFakeConn()
	w.SetPush(3, f.push)
	run(w, "watch fetchers mutations connevents\r\n")
	defer w.Close()
	c := h.NewSession("10.1.2.3:4567")
	c.SetPush(11, newFakeConn().push)
	run(c, "set k 3 100 2\r\nhi\r\nget k nope\r\ndelete k\r\ntouch k 1\r\nincr n 1\r\nappend k 0 0 1\r\nx\r\n")
	c.Close()
	u := h.NewSession("")
	u.SetPush(12, newFakeConn().push)
	u.Close()
	got := f.waitPushed(t, "reason=normal cfd=12\n") // the last line, not conn_new
	want := []string{
		"type=conn_new rip=10.1.2.3 rport=4567 transport=tcp cfd=11",
		"type=item_store key=k status=stored cmd=set ttl=100 clsid=1 cfd=11 size=2",
		"type=item_get key=k status=found clsid=1 cfd=11 size=2",
		"type=item_get key=nope status=not_found clsid=0 cfd=11 size=0",
		"type=item_get key=k status=found clsid=0 cfd=11 size=0",
		"type=item_get key=k status=not_found clsid=0 cfd=11 size=0",
		"type=item_get key=n status=not_found clsid=0 cfd=11 size=0",
		"type=item_store key=k status=not_stored cmd=append ttl=0 clsid=1 cfd=11 size=1",
		"type=conn_close rip=10.1.2.3 rport=4567 transport=tcp reason=normal cfd=11",
		"type=conn_new rip=unix rport=0 transport=local cfd=12",
		"type=conn_close rip=unix rport=0 transport=local reason=normal cfd=12",
	}
	lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(got, "OK\r\n"), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), got)
	}
	for i, l := range lines {
		ts, rest, _ := strings.Cut(l, " gid=")
		_, rest, _ = strings.Cut(rest, " ")
		if !strings.HasPrefix(ts, "ts=") || rest != want[i] {
			t.Errorf("line %d: %q, want ts=... gid=... %s", i, l, want[i])
		}
	}
}

// TestWatchTTL checks item_store's ttl for relative, absolute and past
// expiry times.
func TestWatchTTL(t *testing.T) {
	const now = 1_800_000_000
	for _, tc := range []struct {
		exptime int64
		want    uint32
	}{
		{0, 0}, {100, 100}, {60 * 60 * 24 * 30, 60 * 60 * 24 * 30}, {now + 500, 500}, {-1, 1<<32 - now},
	} {
		if got := watchTTL(tc.exptime, now); got != tc.want {
			t.Errorf("watchTTL(%d) = %d, want %d", tc.exptime, got, tc.want)
		}
	}
}
