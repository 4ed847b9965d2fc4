package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// -d runs tandem in the background the way init scripts expect of memcached
// -d: the command returns once the server listens, with status 0, or with
// the server's own status when it cannot start. A Go program cannot fork, so
// the command starts itself again as the daemon (in a new session, standard
// input and output on /dev/null) and waits on a readiness pipe. Until the
// daemon is ready its log reaches the command's standard error, so a failed
// start is reported where it was launched; then the daemon writes its pid
// file, moves its log to --log-file (or discards it), detaches its standard
// error (unless it is a file or a pipe, where the log stays, as memcached -d
// -v keeps writing to it) and reports readiness.

// daemonEnv tells the started process that it is the daemon and which
// descriptor is its readiness pipe.
const daemonEnv = "TANDEM_DAEMON_READY_FD"

// daemonKeepEnv tells the daemon that its standard error is the command's
// own, a file or a pipe, to keep writing its log to (see keepsStderr).
const daemonKeepEnv = "TANDEM_DAEMON_KEEP_STDERR"

// keepsStderr reports whether a daemon started with this standard error
// keeps logging to it: a regular file or a pipe (Debian's start-memcached
// runs `memcached -d -vv >> LOGFILE 2>&1`, and memcached -v keeps writing
// there), not a terminal or /dev/null. --log-file takes precedence.
func keepsStderr(cfg *Config) bool {
	if cfg.LogFile != "" {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFIFO:
		return true
	}
	return false
}

// daemonReady is what the daemon writes to the readiness pipe.
const daemonReady = "ready\n"

// isDaemonChild reports whether this process is the daemon started by -d.
func isDaemonChild() bool { return os.Getenv(daemonEnv) != "" }

// daemonize starts the daemon and waits until it listens or exits. It
// returns the command's exit status.
func daemonize(cfg *Config) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: -d: cannot find the executable: %v\n", err)
		return exitFailure
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: -d: %v\n", err)
		return exitFailure
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: -d: %v\n", err)
		return exitFailure
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tandem: -d: %v\n", err)
		return exitFailure
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), daemonEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devNull, devNull, logW
	if keepsStderr(cfg) {
		// The daemon writes to the same file or pipe, before it is ready
		// and after: nothing to copy.
		cmd.Env = append(cmd.Env, daemonKeepEnv+"=1")
		cmd.Stderr = os.Stderr
	}
	cmd.ExtraFiles = []*os.File{readyW} // descriptor 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "tandem: -d: cannot start the daemon: %v\n", err)
		return exitFailure
	}
	// Only the daemon holds the write ends now: EOF means it closed them.
	readyW.Close()
	logW.Close()
	devNull.Close()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(os.Stderr, logR)
		close(copied)
	}()
	line, _ := bufio.NewReader(readyR).ReadString('\n')
	if line == daemonReady {
		<-copied // the daemon has let go of its standard error
		return exitOK
	}
	<-copied
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "tandem: -d: the daemon stopped before listening: %v\n", err)
	return exitFailure
}

// detachDaemon finishes a daemon's start once it listens: the log goes to
// --log-file only (or nowhere), standard error (where a crash would print)
// moves to the log file or /dev/null, and the readiness pipe tells the
// waiting command to return.
func detachDaemon(sink *logSink) error {
	fd, err := strconv.Atoi(os.Getenv(daemonEnv))
	if err != nil {
		return fmt.Errorf("-d: bad %s: %w", daemonEnv, err)
	}
	os.Unsetenv(daemonEnv)
	ready := os.NewFile(uintptr(fd), "ready")
	defer ready.Close()
	errTo := sink.logFile()
	if os.Getenv(daemonKeepEnv) != "" {
		// Standard error is the command's file or pipe: the log stays there.
		os.Unsetenv(daemonKeepEnv)
		_, err = io.WriteString(ready, daemonReady)
		return err
	}
	if errTo != nil {
		sink.set(errTo)
	} else {
		sink.set(io.Discard)
		devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer devNull.Close()
		errTo = devNull
	}
	if err := unix.Dup2(int(errTo.Fd()), 2); err != nil {
		return fmt.Errorf("-d: detaching standard error: %w", err)
	}
	sink.stderrToFile()
	_, err = io.WriteString(ready, daemonReady)
	return err
}
