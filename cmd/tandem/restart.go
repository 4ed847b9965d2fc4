package main

import (
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/tandemcache/tandem/cache"
)

// A restartable cache (-e, memcached's memory file): the cache keeps its items in the file
// (cache/restart.go); every graceful stop (SIGUSR1 as in memcached, and SIGTERM, SIGINT and the
// shutdown command as well) saves what the next start needs to find them again.

// logRestart says how the cache started with its memory file: one line, with the reason when
// it started cold.
func logRestart(log zerolog.Logger, r cache.Restart) {
	if r.File == "" {
		return
	}
	if !onTmpfs(r.File) {
		log.Warn().Str("memory_file", r.File).
			Msg("the memory file is not on tmpfs: it works, but item writes go to the file system; mount tmpfs for it (docs/operations.md)")
	}
	if !r.Warm {
		log.Info().Str("memory_file", r.File).Str("reason", r.Reason).Msg("cold start: the memory file's items were not restored")
		return
	}
	log.Info().Str("memory_file", r.File).Int("items", r.Items).Int("dropped_expired", r.Dropped).
		Int64("saved_at", r.SavedAt).Dur("took", r.Took).Msg("warm restart: items restored from the memory file")
}

// saveRestart writes the memory file's metadata at a graceful stop.
func saveRestart(log zerolog.Logger, c *cache.Cache) {
	sv, err := c.SaveRestart()
	if err != nil {
		log.Error().Err(err).Msg("cannot save the memory file for a warm restart; the next start will be cold")
		return
	}
	ev := log.Info()
	if sv.Lost > 0 {
		ev = log.Warn().Int("lost", sv.Lost) // in memory outside the file: the file system was full
	}
	ev.Int("items", sv.Items).Int64("bytes", sv.Bytes).Dur("took", sv.Took).Msg("memory file saved for a warm restart")
}

// onTmpfs reports whether path is on a tmpfs (or ramfs) file system.
func onTmpfs(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
}
