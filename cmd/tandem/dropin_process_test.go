package main

import (
	"github.com/tandemcache/tandem/cmd/testenv"

	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The process as init scripts and service managers see it: -d, -P,
// signals, -r, -k and -u, each checked on tandem and on memcached.

// mcArgs are the arguments every memcached of these tests gets.
func mcArgs(port int, extra ...string) []string {
	args := append([]string{"-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0"}, extra...)
	if os.Getuid() == 0 {
		args = append(args, "-u", "root")
	}
	return args
}

// readPidFile waits for path to hold a pid and returns it.
func readPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	if !waitFor(5*time.Second, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	}) {
		t.Fatalf("no pid in %s", path)
	}
	return pid
}

// processAlive reports whether pid runs (and is not a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// procStat returns field n (1-based, as in proc(5)) of /proc/pid/stat.
func procStat(t *testing.T, pid, n int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[n-3]
}

// procStatus returns a line's value from /proc/pid/status.
func procStatus(t *testing.T, pid int, key string) string {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// stopDaemon sends sig to pid and waits until it is gone.
func stopDaemon(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	_ = syscall.Kill(pid, sig)
	if !waitFor(15*time.Second, func() bool { return !processAlive(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("pid %d still runs 15s after %v", pid, sig)
	}
}

// serves reports whether addr answers version.
func serves(addr string) bool {
	reply, _, err := exchange(addr, "")
	return err == nil && reply == ""
}

// TestDaemon checks -d: the command returns 0 once the server listens, the
// daemon runs in its own session with standard input and output on
// /dev/null, -P holds its pid, the log goes to --log-file, SIGUSR1 stops it
// and removes the pid file. memcached -d is checked the same way, except
// that it may return before it listens.
func TestDaemon(t *testing.T) {
	dir := t.TempDir()
	port := testenv.FreePort(t)
	pidFile, logFile := filepath.Join(dir, "tandem.pid"), filepath.Join(dir, "tandem.log")
	start := time.Now()
	_, stderr, code := runTandem(t, "-d", "-p", strconv.Itoa(port), "-P", pidFile, "--log-file", logFile, "--log-format", "json")
	if code != 0 {
		t.Fatalf("tandem -d: exit %d\n%s", code, stderr)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if !serves(addr) {
		t.Fatalf("tandem -d returned (after %v) before serving", time.Since(start))
	}
	if !strings.Contains(stderr, "tandem listening") {
		t.Errorf("tandem -d did not report its start on standard error: %q", stderr)
	}
	pid := readPidFile(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if sid := procStat(t, pid, 6); sid != strconv.Itoa(pid) {
		t.Errorf("daemon session %s, want its own (%d)", sid, pid)
	}
	for fd := 0; fd <= 2; fd++ {
		target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		want := "/dev/null"
		if fd == 2 {
			want = logFile
		}
		if target != want {
			t.Errorf("daemon fd %d is %q, want %s", fd, target, want)
		}
	}
	stopDaemon(t, pid, syscall.SIGUSR1)
	if _, err := os.Stat(pidFile); err == nil {
		t.Errorf("pid file %s left after the daemon stopped", pidFile)
	}
	log, _ := os.ReadFile(logFile)
	for _, want := range []string{"tandem listening", `"signal":"user defined signal 1"`, `"message":"stopped"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log file lacks %q:\n%s", want, log)
		}
	}

	mc := testenv.NeedTool(t, "memcached", "memcached")
	mport := testenv.FreePort(t)
	mpid := filepath.Join(dir, "memcached.pid")
	if _, stderr, code := runCommand(t, mc, mcArgs(mport, "-d", "-P", mpid)...); code != 0 {
		t.Fatalf("memcached -d: exit %d %s", code, stderr)
	}
	mp := readPidFile(t, mpid)
	t.Cleanup(func() { _ = syscall.Kill(mp, syscall.SIGKILL) })
	maddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(mport))
	if !waitFor(5*time.Second, func() bool { return testenv.Listens(mp, maddr) }) {
		t.Errorf("memcached -d does not serve")
	}
	if sid := procStat(t, mp, 6); sid != strconv.Itoa(mp) {
		t.Errorf("memcached daemon session %s, want its own (%d)", sid, mp)
	}
	stopDaemon(t, mp, syscall.SIGUSR1)
}

// TestDaemonStartFailure checks that -d reports a start failure where it
// was run, with the server's exit status, and leaves nothing running.
func TestDaemonStartFailure(t *testing.T) {
	busy := startServer(t, "goroutine")
	port := busy.Addr[strings.LastIndexByte(busy.Addr, ':')+1:]
	pidFile := filepath.Join(t.TempDir(), "tandem.pid")
	_, stderr, code := runTandem(t, "-d", "-p", port, "-P", pidFile, "--log-format", "json")
	if code != exitFailure || !strings.Contains(stderr, "cannot start serving") {
		t.Fatalf("tandem -d on a busy port: exit %d, stderr %q; want %d and the reason", code, stderr, exitFailure)
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Errorf("pid file written by a daemon that did not start")
	}
	_, stderr, code = runTandem(t, "-d", "-Z")
	if code != exitUsage || !strings.Contains(stderr, "-Z") {
		t.Fatalf("tandem -d -Z: exit %d, stderr %q; want %d", code, stderr, exitUsage)
	}
}

// waitExit waits for cmd (already started) to exit and returns its status,
// or -1 after timeout.
func waitExit(cmd *exec.Cmd, exited <-chan struct{}, timeout time.Duration) int {
	select {
	case <-exited:
		return cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		return -1
	}
}

// TestSignals checks that SIGHUP leaves the server running and SIGUSR1,
// SIGTERM and SIGINT stop it gracefully with status 0, in every mode and on
// memcached.
func TestSignals(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT} {
			s := startServer(t, mode)
			c := dial(t, s.Addr)
			_ = s.cmd.Process.Signal(syscall.SIGHUP)
			time.Sleep(100 * time.Millisecond)
			if got := roundTrip(t, c, "version\r\n", len(sentinelReply)); got != sentinelReply || !s.alive() {
				t.Fatalf("after SIGHUP: %q, alive %v\n%s", got, s.alive(), s.Log())
			}
			_ = s.cmd.Process.Signal(sig)
			if code := waitExit(s.cmd, s.exited, 15*time.Second); code != 0 {
				t.Fatalf("%v: exit %d, want 0\n%s", sig, code, s.Log())
			}
		}
	})
	t.Run("memcached", func(t *testing.T) {
		t.Parallel()
		for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT} {
			mc := testenv.StartMemcached(t)
			cmd, exited := mc.Cmd, mc.Exited
			_ = cmd.Process.Signal(syscall.SIGHUP)
			time.Sleep(100 * time.Millisecond)
			if !serves(mc.Addr) {
				t.Fatalf("memcached does not serve after SIGHUP")
			}
			_ = cmd.Process.Signal(sig)
			if code := waitExit(cmd, exited, 15*time.Second); code != 0 {
				t.Fatalf("memcached %v: exit %d, want 0", sig, code)
			}
		}
	})
}

// limit returns the soft and hard values of a /proc/pid/limits line.
func limit(t *testing.T, pid int, name string) (soft, hard string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest)
			return f[0], f[1]
		}
	}
	t.Fatalf("no %q in /proc/%d/limits", name, pid)
	return "", ""
}

// TestCoreDumps checks -r: the core file size limit is raised to the hard
// limit, as memcached -r does.
func TestCoreDumps(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &rl); err != nil || rl.Max == 0 {
		t.Skipf("SKIPPED: the hard core size limit is 0 here (%v)", err)
	}
	s := startServer(t, "inline", "-r")
	if soft, hard := limit(t, s.pid(), "Max core file size"); soft != hard {
		t.Errorf("tandem -r: core limit %s, want the hard limit %s", soft, hard)
	}
	cmd := testenv.StartMemcached(t, "-r").Cmd
	if soft, hard := limit(t, cmd.Process.Pid, "Max core file size"); soft != hard {
		t.Errorf("memcached -r: core limit %s, want the hard limit %s", soft, hard)
	}
}

// TestLockMemory checks -k: memory is locked (VmLck > 0) where the system
// allows it (it does for memcached -k), else a warning is logged.
func TestLockMemory(t *testing.T) {
	s := startServer(t, "inline", "-k", "-m", "8")
	locked := procStatus(t, s.pid(), "VmLck") != "0 kB"
	if !locked && !strings.Contains(s.Log(), "mlockall failed") {
		t.Fatalf("tandem -k: nothing locked and no warning\n%s", s.Log())
	}
	cmd := testenv.StartMemcached(t, "-k", "-m", "8").Cmd
	if mlocked := procStatus(t, cmd.Process.Pid, "VmLck") != "0 kB"; mlocked != locked {
		t.Errorf("memory locked by tandem -k: %v, by memcached -k: %v", locked, mlocked)
	}
}

// TestSwitchUser checks -u: started as root, the server runs as the user.
func TestSwitchUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("SKIPPED: -u needs the tests to run as root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("SKIPPED: no user nobody: %v", err)
	}
	s := startServerArgs(t, binPath, "-p", "0", "-l", "127.0.0.1", "--log-format", "json", "-u", "nobody")
	if uid := strings.Fields(procStatus(t, s.pid(), "Uid")); uid[1] != u.Uid {
		t.Errorf("tandem -u nobody runs as uid %v, want %s", uid, u.Uid)
	}
	if !serves(s.Addr) {
		t.Errorf("tandem -u nobody does not serve")
	}
	mc := testenv.NeedTool(t, "memcached", "memcached")
	port := testenv.FreePort(t)
	cmd := exec.Command(mc, "-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0", "-u", "nobody")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if !waitFor(5*time.Second, func() bool { return serves(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) }) {
		t.Fatal("memcached -u nobody does not serve")
	}
	if uid := strings.Fields(procStatus(t, cmd.Process.Pid, "Uid")); uid[1] != u.Uid {
		t.Errorf("memcached -u nobody runs as uid %v, want %s", uid, u.Uid)
	}
}
