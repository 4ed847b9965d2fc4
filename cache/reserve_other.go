//go:build !linux || tandem_portable

package cache

import (
	"errors"

	"golang.org/x/sys/unix"
)

// The memory file's plain fallback for systems without Linux's fallocate (macOS, FreeBSD, and
// Linux with the tandem_portable tag): a piece is reserved by writing zeros into it, and a freed
// piece keeps its blocks (the caller zeroes it), so the file holds what its pages held at most.

var errNoPunch = errors.New("cache: no hole punching on this platform")

// reserve writes zeros over the file's n bytes at off, so that a full file system refuses here
// rather than with SIGBUS on a write through the mapping.
func reserve(fd int, off, n int64) error {
	zeros := make([]byte, min(n, 64<<10))
	for n > 0 {
		w, err := unix.Pwrite(fd, zeros[:min(n, int64(len(zeros)))], off)
		if err != nil {
			return err
		}
		off, n = off+int64(w), n-int64(w)
	}
	return nil
}

// punchHole reports that the file's blocks stay: the caller zeroes the piece instead.
func punchHole(int, int64, int64) error { return errNoPunch }
