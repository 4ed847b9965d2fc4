package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Process settings of memcached's command line: -r, -k, -u, and the file
// descriptor limit -c needs.

// enableCoreDumps raises the core file size limit to its maximum and makes a
// fatal Go error dump core (memcached -r). Without -r the Go runtime exits
// on a fatal error without a core file, whatever the limit.
func enableCoreDumps() error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &rl); err != nil {
		return fmt.Errorf("-r: %w", err)
	}
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &rl); err != nil || rl.Cur == 0 {
		return fmt.Errorf("-r: failed to ensure core file creation (core size limit %d): %v", rl.Cur, err)
	}
	debug.SetTraceback("crash")
	return nil
}

// lockMemory locks the process's memory, present and future, in RAM
// (memcached -k). Like memcached, a refusal is a warning, not a failure.
func lockMemory(log zerolog.Logger) {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		log.Warn().Err(err).Msg("-k: mlockall failed; memory is not locked (raise ulimit -l or grant CAP_IPC_LOCK)")
	}
}

// switchUser drops root privileges to name (memcached -u), before the
// server listens. Like memcached it does nothing unless the process runs
// as root.
func switchUser(name string) error {
	if name == "" || os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("-u: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("-u %s: %w", name, err)
	}
	if uid == 0 {
		return nil
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("-u %s: setgroups: %w", name, err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("-u %s: setgid: %w", name, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("-u %s: setuid: %w", name, err)
	}
	return nil
}

// raiseFileLimit lifts the soft RLIMIT_NOFILE towards the hard limit so the
// connection limit is reachable (gnet stops the whole engine on EMFILE).
func raiseFileLimit(log zerolog.Logger, conns int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	// The gnet modes may hold two descriptors per connection: gnet's, and
	// the reply writer's duplicate while its socket is full or after gnet
	// closed it with replies still to write.
	want := 2*uint64(conns) + 64
	if uint64(rl.Cur) < want && rl.Cur < rl.Max {
		setLimit(&rl.Cur, min(max(want, uint64(rl.Cur)), uint64(rl.Max)))
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	}
	if uint64(rl.Cur) < want {
		log.Warn().Uint64("nofile", uint64(rl.Cur)).Int("conn_limit", conns).
			Msg("open file limit is below the connection limit; raise ulimit -n")
	}
}

// setLimit sets a field of syscall.Rlimit, whose type is uint64 on Linux and
// macOS but int64 on FreeBSD (where no limit is negative).
func setLimit[T int64 | uint64](field *T, v uint64) { *field = T(v) }
