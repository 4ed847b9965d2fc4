//go:build !linux || tandem_portable

package reactor

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// writev writes iov to the non-blocking descriptor fd, one write(2) per
// buffer (x/sys/unix has no writev on every system), stopping at the first
// short write or error; it reports what was written before an error, as
// writev(2) does.
func writev(fd int, iov [][]byte) (int, error) {
	done := 0
	for _, b := range iov {
		n, err := unix.Write(fd, b)
		if n > 0 {
			done += n
		}
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		if n < len(b) {
			break
		}
	}
	return done, nil
}

// socketPair returns a non-blocking, close-on-exec Unix stream socket pair.
// The flags are set after the call (not every system takes them in it):
// under syscall.ForkLock, so that no child started meanwhile inherits it.
func socketPair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			_ = unix.Close(fds[0])
			_ = unix.Close(fds[1])
			return fds, err
		}
	}
	return fds, nil
}
