//go:build linux && !tandem_portable

package reactor

import "golang.org/x/sys/unix"

// writev writes iov to the non-blocking descriptor fd with one writev(2).
func writev(fd int, iov [][]byte) (int, error) { return unix.Writev(fd, iov) }

// socketPair returns a non-blocking, close-on-exec Unix stream socket pair.
func socketPair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}
