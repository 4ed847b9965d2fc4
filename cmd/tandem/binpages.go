package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Once the server listens, tandem unmaps its own executable's read-only
// pages (code and read-only data, file-backed): start-up touched most of them
// (flag parsing, help text, TLS and metrics set-up, every package's init), and
// the kernel maps a read fault's neighbouring pages too, so ~85% of the 9 MB
// binary stayed in the RSS although serving uses a fraction of it. Idle RSS
// 10.6 MB -> 5.1 MB (docs/benchmarks.md, section 12a, "Taken (session 19)").
//
// Unmapping alone brought ~6 MB back under load: a fault maps every
// neighbouring page the page cache holds (fault-around, 64 KB), and readahead
// fills the cache in blocks, so each function the server runs, and the
// runtime's tables for it, brought its whole block back. So tandem also marks
// those mappings for random access (no readahead) and drops the executable's
// pages from the page cache (written back first if the file was just built;
// what any process maps stays, with the rest of a multi-page folio holding
// it): a page the server uses again is then read from the file alone, and
// mostly only what serving uses comes back. Peak RSS of the
// trace replays 0.6-1.7 MB lower again (section 12a, "Taken (session 21)"), for
// a few hundred 4 KB reads of the executable in the server's first seconds.
// Only mappings without a private copy of a page are dropped (see
// droppableMappings), and none with -k, whose locked pages cannot be.

// mapping is an address range of /proc/self/maps.
type mapping struct{ start, end uintptr }

// dropBinaryPages unmaps the executable's read-only pages and returns how
// many bytes of mappings it dropped.
func dropBinaryPages() (int, error) {
	ms, _, err := ownDroppableMappings()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		for _, advice := range []int{unix.MADV_DONTNEED, unix.MADV_RANDOM} {
			if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice)); e != 0 {
				return n, e
			}
		}
		n += int(m.end - m.start)
	}
	if n > 0 {
		return n, dropFromPageCache("/proc/self/exe")
	}
	return n, nil
}

// ownDroppableMappings returns the droppable mappings of the running
// executable (droppableMappings) and the text of /proc/self/smaps they come
// from.
func ownDroppableMappings() ([]mapping, []byte, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil, nil, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, nil, err
	}
	return droppableMappings(smaps, unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino), smaps, nil
}

// dropFromPageCache writes back what of the file at path is dirty and asks
// the kernel to drop its pages from the page cache (those nobody maps). The
// write-back is best effort: where it fails (a sandbox that forbids it, a
// read-only mount) the file is normally clean and its pages drop anyway.
func dropFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_ = unix.Fdatasync(int(f.Fd()))
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// errMapsLine is returned by parseMapsLine for a line it cannot read.
var errMapsLine = errors.New("maps: malformed line")

// droppableMappings returns the mappings of smaps (the text of
// /proc/self/smaps) whose pages can be unmapped without losing anything:
// those of the file of device major:minor and inode ino, read-only ("r-xp",
// "r--p"), none of whose pages is a private copy (Anonymous: 0 kB) or locked.
// A private copy is data of the process's own: in a position-independent
// build the loader writes relocations into read-only data before protecting
// it, and an uprobe's breakpoint sits in such a copy; dropping it would bring
// back the file's bytes (a PIE build without this check dies of SIGSEGV at
// once). Writable mappings ("rw-p") are never returned.
func droppableMappings(smaps []byte, major, minor uint32, ino uint64) []mapping {
	var out []mapping
	cur, ok := mapping{}, false // the mapping whose fields follow, if it qualifies
	flush := func() {
		if ok {
			out = append(out, cur)
		}
		ok = false
	}
	for line := range bytes.Lines(smaps) {
		if m, perms, dev, inode, err := parseMapsLine(line); err == nil {
			flush()
			cur, ok = m, inode == ino && dev == [2]uint32{major, minor} && (perms == "r-xp" || perms == "r--p")
			continue
		}
		key, val, found := bytes.Cut(line, []byte(":"))
		if !found || !ok {
			continue
		}
		switch string(key) {
		case "Anonymous", "Locked":
			if f := bytes.Fields(val); len(f) == 0 || string(f[0]) != "0" {
				ok = false
			}
		}
	}
	flush()
	return out
}

// parseMapsLine reads a mapping's line of /proc/self/maps or smaps: "start-end
// perms offset major:minor inode [path]".
func parseMapsLine(line []byte) (m mapping, perms string, dev [2]uint32, ino uint64, err error) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return m, "", dev, 0, errMapsLine
	}
	lo, hi, ok1 := bytes.Cut(f[0], []byte("-"))
	maj, mnr, ok2 := bytes.Cut(f[3], []byte(":"))
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	dmaj, err3 := strconv.ParseUint(string(maj), 16, 32)
	dmin, err4 := strconv.ParseUint(string(mnr), 16, 32)
	ino, err5 := strconv.ParseUint(string(f[4]), 10, 64)
	if !ok1 || !ok2 || errors.Join(err1, err2, err3, err4, err5) != nil || end <= start {
		return m, "", dev, 0, errMapsLine
	}
	return mapping{uintptr(start), uintptr(end)}, string(f[1]), [2]uint32{uint32(dmaj), uint32(dmin)}, ino, nil
}
