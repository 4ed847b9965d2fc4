//go:build linux && !tandem_portable

package main

import "golang.org/x/sys/unix"

// fileSystemOf says whether path is on a file system held in memory (tmpfs,
// ramfs) and how many bytes it has free for an unprivileged user. ok is
// false when it cannot tell. restart_other.go is the fallback for other
// systems (and for Linux with the tandem_portable tag).
func fileSystemOf(path string) (inMemory bool, free int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) != nil {
		return false, 0, false
	}
	inMemory = st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
	return inMemory, int64(st.Bavail) * st.Bsize, true
}
