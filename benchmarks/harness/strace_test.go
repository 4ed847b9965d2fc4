package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testdata/strace-c.txt is `strace -c -f -p` (strace 6.1) of memcached
// -t 2 serving five connections.
func TestParseStraceSummary(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "strace-c.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseStraceSummary(string(b))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"read": 15, "write": 5, "sendmsg": 5, "epoll_wait": 25, "clock_nanosleep": 7, "total": 84}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%s: %d calls, want %d (all: %v)", name, got[name], n, got)
		}
	}
	var sum int64
	for name, n := range got {
		if name != "total" {
			sum += n
		}
	}
	if sum != got["total"] {
		t.Errorf("calls sum to %d, total says %d", sum, got["total"])
	}
}

func TestParseStraceSummaryErrors(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"no header", "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"},
		{"no total", "% time     seconds  usecs/call     calls    errors syscall\n" +
			"------ ----------- ----------- --------- --------- ----------------\n" +
			"  0.00    0.000000           0        15         5 read\n"},
		{"bad calls", "% time     seconds  usecs/call     calls    errors syscall\n" +
			"------ ----------- ----------- --------- --------- ----------------\n" +
			"  0.00    0.000000           0       abc           read\n"},
	}
	for _, tc := range tests {
		if got, err := parseStraceSummary(tc.in); err == nil {
			t.Errorf("%s: parsed %v, want an error", tc.name, got)
		}
	}
}

// TestStraceSession counts the syscalls of a real process, when strace can
// attach here.
func TestStraceSession(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	if testing.Short() {
		t.Skip("attaches strace; skipped with -short")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	s, err := startStrace(cmd.Process.Pid, t.TempDir())
	if err != nil {
		t.Skipf("strace cannot attach here: %v", err)
	}
	got, err := s.stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["total"]; !ok {
		t.Errorf("no total in %v", got)
	}
}
