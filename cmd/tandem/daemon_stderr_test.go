package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// TestDaemonKeepsRedirectedStderr runs Debian's start-memcached line,
// `-d -vv >> LOGFILE 2>&1`, on memcached and tandem: after the start both
// keep writing their log (with -vv, the command lines) to the file.
func TestDaemonKeepsRedirectedStderr(t *testing.T) {
	run := func(t *testing.T, bin string, args []string, wantCmd string) {
		dir := t.TempDir()
		port := testenv.FreePort(t)
		pidFile, logFile := filepath.Join(dir, "pid"), filepath.Join(dir, "log")
		args = append(mcArgs(port, "-d", "-vv", "-P", pidFile), args...)
		// What start-memcached runs, through a shell as it does.
		line := "exec " + bin + " " + strings.Join(args, " ") + " >> " + logFile + " 2>&1"
		if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", line, err, out)
		}
		pid := readPidFile(t, pidFile)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if !waitFor(10*time.Second, func() bool { return serves(addr) }) {
			t.Fatalf("%s does not serve", line)
		}
		if _, _, err := exchange(addr, "get daemonkey\r\n"); err != nil {
			t.Fatal(err)
		}
		read := func() string { b, _ := os.ReadFile(logFile); return string(b) }
		if !waitFor(10*time.Second, func() bool { return strings.Contains(read(), wantCmd) }) {
			t.Errorf("%s: no %q in the log file after the start:\n%s", line, wantCmd, read())
		}
		if target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/2"); target != logFile {
			t.Errorf("daemon standard error is %q, want %s", target, logFile)
		}
		stopDaemon(t, pid, syscall.SIGTERM)
	}
	t.Run("memcached", func(t *testing.T) {
		run(t, testenv.NeedTool(t, "memcached", "memcached"), nil, "get daemonkey")
	})
	t.Run("tandem", func(t *testing.T) {
		run(t, binPath, []string{"--log-format", "json"}, "get daemonkey")
	})
}
