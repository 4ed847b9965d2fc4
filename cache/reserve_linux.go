//go:build linux && !tandem_portable

package cache

import "golang.org/x/sys/unix"

// The memory file's Linux calls (pagemem.go's arena): fallocate reserves a piece of the file
// and punches it out again. reserve_other.go is the plain fallback, also built on Linux with the
// tandem_portable tag, so that its tests run there.

// reserve makes the file's n bytes at off take blocks now, so that a full tmpfs refuses here
// rather than with SIGBUS on a write. A file system without fallocate is used unreserved.
func reserve(fd int, off, n int64) error {
	if err := unix.Fallocate(fd, 0, off, n); err != nil && err != unix.EOPNOTSUPP {
		return err
	}
	return nil
}

// punchHole gives the file's n bytes at off back to the file system (reads of a hole are zeros).
func punchHole(fd int, off, n int64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
