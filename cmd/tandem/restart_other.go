//go:build !linux || tandem_portable

package main

// fileSystemOf cannot tell, outside Linux, whether the memory file's file
// system is held in memory (statfs's fields differ by system): the server
// skips the tmpfs and free-space warnings there (restart_linux.go).
func fileSystemOf(string) (inMemory bool, free int64, ok bool) { return false, 0, false }
