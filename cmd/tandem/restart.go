package main

import (
	"github.com/rs/zerolog"
	"time"

	"github.com/tandemcache/tandem/cache"
)

// A restartable cache (-e, memcached's memory file): the cache keeps its items in the file
// (cache/restart.go); every graceful stop (SIGUSR1 as in memcached, and SIGTERM, SIGINT and the
// shutdown command as well) saves what the next start needs to find them again.

// logRestart says how the cache started with its memory file: one line, with the reason when
// it started cold; and a warning when the file is not on tmpfs or its file system has less room
// than the items may take (limit bytes).
// held is the number of items the cache holds after restoring.
func logRestart(log zerolog.Logger, r cache.Restart, held uint64, limit int64) {
	if r.File == "" {
		return
	}
	if inMemory, free, ok := fileSystemOf(r.File); ok {
		if !inMemory {
			log.Warn().Str("memory_file", r.File).
				Msg("the memory file is not on tmpfs: it works, but the kernel writes item pages back to the disk; mount a tmpfs for it (docs/operations.md)")
		}
		if free+r.Bytes < limit {
			log.Warn().Str("memory_file", r.File).Int64("free_bytes", free).Int64("memory_limit", limit).
				Msg("the memory file's file system has less room than -m: items beyond it are kept in process memory and lost at a restart")
		}
	}
	if !r.Warm {
		log.Info().Str("memory_file", r.File).Str("reason", r.Reason).Msg("cold start: the memory file's items were not restored")
		return
	}
	ev := log.Info()
	msg := "warm restart: items restored from the memory file"
	if lost := int64(r.Items) - int64(held); lost > 0 {
		// The cache could not keep every item the file held: this -m keeps
		// fewer than the limit the file was filled under (a cache_memlimit
		// raised it in the last run).
		ev = log.Warn().Int64("dropped_over_limit", lost)
		msg = "warm restart: the memory file held more items than this -m keeps; the rest were dropped, counted in evictions (start with the -m that cache_memlimit last set to keep them)"
	}
	ev.Str("memory_file", r.File).Int("items_in_file", r.Items).Uint64("items", held).Int("dropped_expired", r.Dropped).
		Int64("saved_at", r.SavedAt).Str("took", r.Took.Round(time.Microsecond).String()).Msg(msg)
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
	ev.Int("items", sv.Items).Int64("bytes", sv.Bytes).Str("took", sv.Took.Round(time.Microsecond).String()).Msg("memory file saved for a warm restart")
}
