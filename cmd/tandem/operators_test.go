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

// Issue #26 (operators, round 2): the listening default said at start,
// extstore refused, the log file reopened on SIGHUP, and log lines that
// used to mislead.

// TestListenDefaultLogged checks that a server started without -l says at
// start that it listens on the loopback interface only and how to get
// memcached's behaviour, and that one given -l does not.
func TestListenDefaultLogged(t *testing.T) {
	s := startServerArgs(t, binPath, "-p", "0", "--log-format", "json")
	// It comes before "tandem listening", which startServerArgs waits for.
	log := s.Log()
	if !strings.Contains(log, `"message":"`+listenDefaultMsg+`"`) || !strings.Contains(log, `"listen":"127.0.0.1:`) {
		t.Errorf("no -l: the listening default is not logged:\n%s", log)
	}
	if n := strings.Count(log, "-l 0.0.0.0"); n != 1 {
		t.Errorf("no -l: %d lines name -l 0.0.0.0, want 1:\n%s", n, log)
	}
	s = startServerArgs(t, binPath, "-p", "0", "-l", "127.0.0.1", "--log-format", "json")
	if log := s.Log(); strings.Contains(log, "no -l given") {
		t.Errorf("-l 127.0.0.1: the default is logged although -l was given:\n%s", log)
	}
}

// TestExtstoreRefused checks that every extstore -o key stops tandem at
// start with exit status 2 and a message saying why, as -e does, where
// memcached 1.6.18 (built with extstore) accepts the same command line.
func TestExtstoreRefused(t *testing.T) {
	dir := t.TempDir()
	for k := range memcachedKeys() {
		if !strings.HasPrefix(k, "ext_") {
			continue
		}
		arg := k + "=" + extendedSample(k)
		if k == "ext_path" {
			arg = k + "=" + filepath.Join(dir, "ext") + ":64m"
		}
		_, stderr, code := runTandem(t, "-p", "0", "-o", arg)
		if code != exitUsage || !strings.Contains(stderr, "-o "+arg+": external storage (extstore) is not supported by tandem") ||
			!strings.Contains(stderr, "RAM-only") {
			t.Errorf("-o %s: exit %d, stderr %q; want exit 2 saying extstore is refused and why", arg, code, stderr)
		}
	}
	mc := testenv.NeedTool(t, "memcached", "memcached")
	args := []string{"-o", "ext_page_size=1,ext_path=" + filepath.Join(dir, "mc") + ":64m", "-V"}
	if os.Getuid() == 0 {
		args = append(args, "-u", "root")
	}
	if out, stderr, code := runCommand(t, mc, args...); code != 0 || !strings.HasPrefix(out, "memcached 1.6.18") {
		t.Errorf("memcached %q: exit %d, %s%s; the refusal is tandem's own", args, code, out, stderr)
	}
}

// TestLogFileReopenedOnSIGHUP rotates --log-file as logrotate does without
// copytruncate (rename, then SIGHUP) and checks that the server goes on
// logging into a new file at the path, and the old file keeps what came
// before.
func TestLogFileReopenedOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "tandem.log")
	port := testenv.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// The log goes to the file, so startServerArgs cannot read the address.
	cmd := exec.Command(binPath, "-l", addr, "--log-format", "json", "--log-file", logPath, "-vv")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	if !waitFor(20*time.Second, func() bool { return serves(addr) }) {
		t.Fatalf("not serving on %s", addr)
	}
	if _, _, err := exchange(addr, "get before-rotation\r\n"); err != nil {
		t.Fatal(err)
	}
	rotated := logPath + ".1"
	if err := os.Rename(logPath, rotated); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	if !waitFor(20*time.Second, func() bool { return strings.Contains(read(logPath), "log file reopened") }) {
		t.Fatalf("no new log file after rename + SIGHUP; old file:\n%s", read(rotated))
	}
	if _, _, err := exchange(addr, "get after-rotation\r\n"); err != nil {
		t.Fatal(err)
	}
	if !waitFor(20*time.Second, func() bool { return strings.Contains(read(logPath), "get after-rotation") }) {
		t.Fatalf("the command after the rotation is not in the new file:\n%s", read(logPath))
	}
	old := read(rotated)
	if !strings.Contains(old, "tandem listening") || !strings.Contains(old, "get before-rotation") || strings.Contains(old, "after-rotation") {
		t.Errorf("the rotated file does not hold exactly what came before:\n%s", old)
	}
	if strings.Contains(read(logPath), "before-rotation") {
		t.Errorf("the new file holds lines from before the rotation:\n%s", read(logPath))
	}
	select {
	case <-exited:
		t.Fatal("SIGHUP stopped the server")
	default:
	}
}

// TestNoMisleadingLogLines checks the start and close lines of issue #26's
// item 9 at -vv with -p 0 in every mode: no address with port 0, no gnet
// "default logging level is INFO", and a client's orderly close not logged
// as an error. tandem's own version is a stats field beside memcached's.
func TestNoMisleadingLogLines(t *testing.T) {
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode, "-vv")
		if _, _, err := exchange(s.Addr, "version\r\n"); err != nil {
			t.Fatal(err)
		}
		if !waitFor(20*time.Second, func() bool { return strings.Contains(s.Log(), "> VERSION") }) {
			t.Fatalf("no command log at -vv:\n%s", s.Log())
		}
		st, err := serverStats(s.Addr, "")
		if err != nil {
			t.Fatal(err)
		}
		if st["tandem_version"] != version || st["version"] != "1.6.18" {
			t.Errorf("stats: tandem_version %q version %q, want %q and 1.6.18", st["tandem_version"], st["version"], version)
		}
		if mode != "goroutine" && !waitFor(20*time.Second, func() bool { return strings.Contains(s.Log(), "connection closed by the peer") }) {
			t.Errorf("an orderly close is not logged as one:\n%s", s.Log())
		}
		log := s.Log()
		for _, bad := range []string{":0\"", ":0 ", "tcp://127.0.0.1:0", "default logging level", "read: EOF", `"error":"EOF"`} {
			if strings.Contains(log, bad) {
				t.Errorf("the log contains %q:\n%s", bad, log)
			}
		}
	})
}

// TestDaemonLogReopenedOnSIGHUP rotates a daemon's --log-file: after
// rename + SIGHUP the log and the daemon's standard error (where a crash
// prints) are the new file.
func TestDaemonLogReopenedOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	port := testenv.FreePort(t)
	pidFile, logFile := filepath.Join(dir, "tandem.pid"), filepath.Join(dir, "tandem.log")
	if _, stderr, code := runTandem(t, "-d", "-p", strconv.Itoa(port), "-P", pidFile, "--log-file", logFile, "--log-format", "json"); code != 0 {
		t.Fatalf("tandem -d: exit %d\n%s", code, stderr)
	}
	pid := readPidFile(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if err := os.Rename(logFile, logFile+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	if !waitFor(20*time.Second, func() bool { return strings.Contains(read(logFile), "log file reopened") }) {
		t.Fatalf("no new log file after rename + SIGHUP; old one:\n%s", read(logFile+".1"))
	}
	if target, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/2"); target != logFile {
		t.Errorf("daemon standard error is %q after the rotation, want %s", target, logFile)
	}
	stopDaemon(t, pid, syscall.SIGUSR1)
	if !strings.Contains(read(logFile), `"message":"stopped"`) || strings.Contains(read(logFile+".1"), `"message":"stopped"`) {
		t.Errorf("the stop was not logged in the new file only")
	}
}
