package harness

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// A thread's status file as Linux 6.x writes it (trimmed).
const sampleStatus = `Name:	memcached
Umask:	0022
State:	S (sleeping)
Tgid:	4242
Pid:	4242
VmPeak:	  416560 kB
VmHWM:	   21712 kB
VmRSS:	    7020 kB
RssAnon:	    3080 kB
RssFile:	    3940 kB
Threads:	10
SigQ:	0/96284
voluntary_ctxt_switches:	1523
nonvoluntary_ctxt_switches:	17
`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want statusFields
	}{
		{"full", sampleStatus, statusFields{RSSKB: 7020, HWMKB: 21712, AnonKB: 3080, Threads: 10, VolCS: 1523, InvolCS: 17}},
		{"empty", "", statusFields{}},
		{"malformed values", "VmRSS:\tlots kB\nThreads:\t\nvoluntary_ctxt_switches: 5\n", statusFields{VolCS: 5}},
		{"no colon lines", "garbage\n\nVmHWM 12 kB\n", statusFields{}},
	}
	for _, tc := range tests {
		if got := parseStatus([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: parseStatus = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
		ok   bool
	}{
		{"plain", "42 (tandem) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 5 0 100 0 0", 3, true},
		{"name with spaces and parens", "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 0.1, true},
		{"short", "42 (x) S 1 2", 0, false},
		{"no name", "42 x S", 0, false},
	}
	for _, tc := range tests {
		got, err := parseStatCPU([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: parseStatCPU = %v, %v; want %v, ok %v", tc.name, got, err, tc.want, tc.ok)
		}
	}
}

// TestReadProcSumsThreads: the process's context switches are the sum over
// its threads, not the main thread's alone.
func TestReadProcSumsThreads(t *testing.T) {
	before, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	slept, release := make(chan struct{}), make(chan struct{})
	go func() {
		runtime.LockOSThread() // a thread of its own, sleeping many times
		defer runtime.UnlockOSThread()
		for range 50 {
			time.Sleep(time.Millisecond)
		}
		close(slept)
		<-release // alive while it is counted
	}()
	<-slept
	defer close(release)
	after, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.Threads < 2 || after.VolCS < before.VolCS+50 {
		t.Errorf("threads %d, voluntary switches %d -> %d: want 50 more", after.Threads, before.VolCS, after.VolCS)
	}
}
