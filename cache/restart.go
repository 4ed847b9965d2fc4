package cache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/unix"
)

// A restartable cache (Config.MemoryFile, memcached's -e): item memory is a shared mapping of
// one file, a region of twice its budget per shard (arena, pagemem.go). Records never point at
// each other and a handle is a page number and a chunk number, so the file is meaningful to the
// next process given each shard's page table. SaveRestart writes that table with everything
// else the memory's meaning depends on into FILE.meta; New reads and deletes it, checks it
// against this process's settings and the file (a checksum per page), and rebuilds the index,
// the window and the main space from the records. Anything that does not match starts cold,
// with the reason in Restart().Reason: nothing half-restored is ever served.

// restartLayout names the memory layout the file and the metadata describe: bump it whenever
// the record header, the state bits, the slab classes, the handle format or the metadata change
// meaning, so that a tandem with another layout starts cold instead of misreading the file.
const restartLayout = 1

// metaMagic starts the metadata file, followed by the body's CRC-32C and a newline.
const metaMagic = "tandem-memory-file-meta"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Restart says how a Cache with a memory file started.
type Restart struct {
	File    string        // Config.MemoryFile
	Warm    bool          // the items of the last graceful stop were restored
	Reason  string        // why the start was cold; "" when warm
	Items   int           // items restored
	Bytes   int64         // bytes of the file the restored pages take
	Dropped int           // items found expired or flushed (counted in Stats.Reclaimed), or malformed, dropped while restoring
	SavedAt int64         // unix seconds the metadata was written (warm only)
	Took    time.Duration // reading the metadata and rebuilding
}

// Saved says what SaveRestart wrote.
type Saved struct {
	Items int           // items the next start can restore
	Lost  int           // items in memory outside the file (it had no room left), not saved
	Bytes int64         // bytes of pages in the file
	Took  time.Duration // checksums, msync and the metadata file
}

// memFile is the open memory file and its mapping.
type memFile struct {
	path   string
	fd     int
	mem    []byte
	region int64 // bytes per shard
}

// restartMeta is the metadata file's body.
type restartMeta struct {
	Layout   int
	Settings restartSettings
	Seed     uint64     // fileHash's seed
	Probe    uint64     // fileHash of probeKey under Seed, as the writer computed it
	CAS      uint64     // the last cas id handed out
	Flush    *flushMeta `json:",omitempty"`
	SavedAt  int64
	Items    int
	Pages    [][]pageMeta // per shard, its page table in order; Len 0 is an unused entry
	Capacity []int        // per shard, its main space's capacity
}

// restartSettings are the settings the memory's layout depends on.
type restartSettings struct {
	MaxBytes   int64 // -m
	MaxItem    int64 // -I
	DisableCAS bool  // -C
	Shards     int
	Region     int64
	MaxPage    int
	MaxChunk   int
	OSPage     int
	Classes    uint32 // CRC-32C of the slab classes' sizes
	// LargeClientFlags is Config.LargeClientFlags (records carry a tail with it); left out of
	// the file when false, so a file without the option reads as before it existed.
	LargeClientFlags bool `json:",omitempty"`
}

type flushMeta struct {
	Live, PastLive int64
	CAS, PastCAS   uint64
}

type pageMeta struct {
	Off    int64 // in the shard's region
	Len    int
	Class  int
	Carved int
	CRC    uint32
}

var probeKey = []byte("tandem memory file probe")

// fileHash is the hash that picks a key's shard in a Cache with a memory file: xxhash with a
// random seed that the metadata keeps. The shard of a record must not change across a restart
// (its chunk is in its shard's pages), and maphash's values differ between processes even for
// one seed. Without a memory file the shard comes from the maphash the index uses anyway.
func fileHash(seed uint64, key []byte) uint64 {
	var d xxhash.Digest
	d.ResetWithSeed(seed)
	d.Write(key)
	return d.Sum64()
}

// settingsOf returns the layout settings of a Cache built from cfg.
func settingsOf(cfg Config, shards int, region int64, sc *shardConfig) restartSettings {
	classes := make([]byte, 0, 4*len(slabSizes))
	for _, n := range slabSizes {
		classes = le.AppendUint32(classes, uint32(n))
	}
	return restartSettings{
		MaxBytes: cfg.MaxBytes, MaxItem: sc.maxItem, DisableCAS: cfg.DisableCAS, Shards: shards,
		Region: region, MaxPage: sc.maxPage, MaxChunk: sc.maxChunk, OSPage: osPage,
		Classes: crc32.Checksum(classes, castagnoli), LargeClientFlags: cfg.LargeClientFlags,
	}
}

// mismatch names the first setting that differs between then and now, or "".
func (then restartSettings) mismatch(now restartSettings) string {
	for _, f := range []struct {
		name      string
		then, now any
	}{
		{"-m (bytes)", then.MaxBytes, now.MaxBytes},
		{"-I (item size limit)", then.MaxItem, now.MaxItem},
		{"-C (cas disabled)", then.DisableCAS, now.DisableCAS},
		{"the shard count", then.Shards, now.Shards},
		{"the region size", then.Region, now.Region},
		{"the slab page size", then.MaxPage, now.MaxPage},
		{"the largest chunk", then.MaxChunk, now.MaxChunk},
		{"the OS page size", then.OSPage, now.OSPage},
		{"the slab classes", then.Classes, now.Classes},
		{"--large-client-flags", then.LargeClientFlags, now.LargeClientFlags},
	} {
		if f.then != f.now {
			return fmt.Sprintf("%s changed: %v when saved, %v now", f.name, f.then, f.now)
		}
	}
	return ""
}

// openMemFile maps cfg.MemoryFile for a Cache of the given shards and budget and returns it
// with the metadata of the last graceful stop when there is one that matches (nil and the
// reason otherwise; the metadata file is deleted once read either way). A cold file is emptied.
// The error is for a file that cannot be opened, sized or mapped.
func openMemFile(cfg Config, shards int, budget int64, sc *shardConfig) (*memFile, *restartMeta, string, error) {
	region := (2*budget + int64(osPage) - 1) &^ int64(osPage-1)
	size := region * int64(shards)
	fd, err := unix.Open(cfg.MemoryFile, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, nil, "", fmt.Errorf("cache: memory file %s: %w", cfg.MemoryFile, err)
	}
	// One process per file: a second one mapping it would write over the first one's items.
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, nil, "", fmt.Errorf("cache: memory file %s is in use by another process (%w)", cfg.MemoryFile, err)
	}
	meta, reason := readMeta(cfg.MemoryFile+".meta", settingsOf(cfg, shards, region, sc))
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, "", fmt.Errorf("cache: memory file %s: %w", cfg.MemoryFile, err)
	}
	if meta != nil && st.Size != size {
		meta, reason = nil, fmt.Sprintf("the memory file is %d bytes, the metadata says %d (truncated or replaced)", st.Size, size)
	}
	if meta == nil {
		// Cold: drop whatever the file held, then give it its size (sparse).
		if err := unix.Ftruncate(fd, 0); err == nil {
			err = unix.Ftruncate(fd, size)
		}
		if err != nil {
			unix.Close(fd)
			return nil, nil, "", fmt.Errorf("cache: memory file %s: sizing to %d bytes: %w", cfg.MemoryFile, size, err)
		}
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, nil, "", fmt.Errorf("cache: memory file %s: mapping %d bytes: %w", cfg.MemoryFile, size, err)
	}
	return &memFile{path: cfg.MemoryFile, fd: fd, mem: mem, region: region}, meta, reason, nil
}

// arena returns shard i's region of the file, empty.
func (f *memFile) arena(i int) *arena {
	off := int64(i) * f.region
	return &arena{fd: f.fd, off: off, mem: f.mem[off : off+f.region : off+f.region],
		used: make([]uint64, (f.region/int64(osPage)+63)/64)}
}

// empty drops the file's content (after a restore that failed half way).
func (f *memFile) empty() error {
	if err := unix.Ftruncate(f.fd, 0); err != nil {
		return err
	}
	return unix.Ftruncate(f.fd, int64(len(f.mem)))
}

// closeMemFile releases the mapping and the descriptor of a Cache no longer reachable (or, in
// tests, no longer used); a second call does nothing, so that it never closes a descriptor
// number the process has since reused.
func closeMemFile(f *memFile) {
	if f.fd < 0 {
		return
	}
	_ = unix.Munmap(f.mem)
	_ = unix.Close(f.fd)
	f.fd, f.mem = -1, nil
}

// readMeta reads and deletes the metadata file and returns it if it is whole and matches want;
// otherwise nil and why.
func readMeta(path string, want restartSettings) (*restartMeta, string) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no metadata file (a first start, or the last stop was not graceful)"
	}
	if err != nil {
		return nil, "cannot read the metadata file: " + err.Error()
	}
	if err := os.Remove(path); err != nil {
		return nil, "cannot delete the metadata file, so a crash could reuse it: " + err.Error()
	}
	head, body, ok := bytes.Cut(b, []byte{'\n'})
	var sum uint32
	if n, _ := fmt.Sscanf(string(head), metaMagic+" %08x", &sum); !ok || n != 1 {
		return nil, "the metadata file is not tandem's"
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, "the metadata file's checksum does not match (truncated or corrupt)"
	}
	var m restartMeta
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "the metadata file does not parse: " + err.Error()
	}
	if m.Layout != restartLayout {
		return nil, fmt.Sprintf("the memory file has another layout (%d; this tandem reads %d)", m.Layout, restartLayout)
	}
	if why := m.Settings.mismatch(want); why != "" {
		return nil, why
	}
	if len(m.Pages) != want.Shards || len(m.Capacity) != want.Shards {
		return nil, "the metadata's page tables do not match the shard count"
	}
	if fileHash(m.Seed, probeKey) != m.Probe {
		return nil, "the shard hash differs from the one that saved the file (another xxhash)"
	}
	return &m, ""
}

// restore rebuilds every shard from the pages m lists, or returns why it cannot; the shards are
// fresh, and on an error the caller makes them fresh again.
func (c *Cache) restore(m *restartMeta) (restored, dropped int, bytes int64, err error) {
	// Check every page against its checksum before anything is built from it.
	for i, pages := range m.Pages {
		s := &c.shards[i]
		for p, pm := range pages {
			if pm.Len == 0 {
				continue
			}
			mem, ok := s.file.take(pm.Off, pm.Len)
			if !ok || !pm.valid(s.cfg) {
				return 0, 0, 0, fmt.Errorf("the page table of shard %d is invalid at page %d", i, p)
			}
			if crc32.Checksum(mem, castagnoli) != pm.CRC {
				return 0, 0, 0, fmt.Errorf("the memory file does not match its checksum (shard %d, page %d)", i, p)
			}
			bytes += int64(pm.Len)
		}
	}
	c.casID.Store(m.CAS)
	if fl := m.Flush; fl != nil {
		c.flush.Store(&flushState{live: fl.Live, cas: fl.CAS, pastLive: fl.PastLive, pastCAS: fl.PastCAS})
	}
	now, flush := c.clock.Now(), c.flush.Load()
	for i, pages := range m.Pages {
		s := &c.shards[i]
		s.now, s.flush = now, flush
		n, d := s.restoreLocked(c, uint64(i), pages, m.Capacity[i])
		restored, dropped = restored+n, dropped+d
	}
	return restored, dropped, bytes, nil
}

// valid reports whether a page table entry describes a page this layout can hold.
func (pm pageMeta) valid(sc *shardConfig) bool {
	if pm.Class == large {
		return pm.Carved == 1 && pm.Len >= hdrSize
	}
	return pm.Class >= 0 && pm.Class < len(slabSizes) && slabSizes[pm.Class] <= sc.maxChunk &&
		pm.Carved >= 0 && pm.Carved <= pm.Len/slabSizes[pm.Class]
}

// restoreLocked builds shard number i (a fresh one, not yet shared) from its page table, whose
// memory restore has checked: every live record that belongs here goes into the index and the
// window or the main space it was in, and an expired or flushed one leaves again through
// killLocked; every other carved chunk goes onto its class's free list. It returns the records
// restored and dropped.
func (s *shard) restoreLocked(c *Cache, i uint64, pages []pageMeta, capacity int) (restored, dropped int) {
	s.pages = make([]page, len(pages))
	for p, pm := range pages {
		if pm.Len == 0 {
			s.unused = append(s.unused, p)
			continue
		}
		pg := &s.pages[p]
		off := int(pm.Off)
		*pg = page{mem: s.file.mem[off : off+pm.Len : off+pm.Len], kind: inFile, off: off, size: pm.Len, class: pm.Class, carved: pm.Carved}
		s.pageBytes += int64(pm.Len)
		if pm.Class != large {
			pg.size = slabSizes[pm.Class]
			s.slab[pm.Class].pages++
			s.empty++ // until linkLocked restores its records
			if pm.Carved < pm.Len/pg.size {
				s.slab[pm.Class].carving = p + 1
			}
		}
	}
	for p := range s.pages {
		pg := &s.pages[p]
		for j := range pg.carved {
			h := handle(p, j)
			ch := s.chunk(h)
			if ch[offState]&stLive != 0 {
				switch s.restoreRecordLocked(c, i, h, ch) {
				case restoredLive:
					restored++
					continue
				case restoredGone: // killLocked freed its chunk
					dropped++
					continue
				}
				dropped++
			}
			ch[offState] = 0
			if pg.class == large {
				s.dropPageLocked(p)
				break
			}
			s.pushFreeLocked(pg.class, h)
		}
	}
	s.rebuildLocked(min(max(capacity, minCapacity), s.cfg.maxCap)) // as it was: no main item is evicted
	s.fitLocked(noHandle, 0)
	return restored, dropped
}

// What restoreRecordLocked did with a record.
const (
	restoredBad  = iota // not linked: malformed, of another shard, or a second record of a key
	restoredLive        // linked
	restoredGone        // expired or flushed: linked and removed again (killLocked), as every exit
)

// restoreRecordLocked links the live record in chunk ch (handle h), unless it is malformed, of
// another shard or a second record of a key; an expired or flushed one leaves at once through
// killLocked.
func (s *shard) restoreRecordLocked(c *Cache, i uint64, h uint32, ch []byte) int {
	klen, vlen := int(le.Uint16(ch[offKlen:])), int(le.Uint32(ch[offVlen:]))
	if klen == 0 || hdrSize+klen+vlen+s.cfg.tail > len(ch) {
		return restoredBad
	}
	r := record(ch[:hdrSize+klen+vlen])
	hash := s.hash(r.key())
	if fileHash(c.fileSeed, r.key())>>c.shift != i {
		return restoredBad
	}
	if _, dup := s.lookupLocked(hash, r.key()); dup != nil {
		return restoredBad
	}
	r[offState] &^= stRef | stRetry
	s.linkLocked(hash, h, r)
	if s.invalidLocked(r) {
		s.st.Reclaimed++ // expired or flushed while the server was down: stats counts it as reclaimed
		s.killLocked(h)
		return restoredGone
	}
	return restoredLive
}

// SaveRestart prepares a Cache with a memory file for the next process (a graceful stop): with
// every shard locked, it checksums each page in the file, flushes the mapping to the file and
// writes FILE.meta. The Cache must not be used afterwards (the next start would find the pages
// changed and start cold). Items in memory outside the file are counted as Lost.
func (c *Cache) SaveRestart() (Saved, error) {
	start := time.Now()
	if c.file == nil {
		return Saved{}, errors.New("cache: no memory file")
	}
	for i := range c.shards {
		c.shards[i].mu.Lock()
		defer c.shards[i].mu.Unlock()
	}
	var sv Saved
	m := restartMeta{Layout: restartLayout, Settings: c.settings, Seed: c.fileSeed, Probe: fileHash(c.fileSeed, probeKey),
		CAS: c.casID.Load(), SavedAt: time.Now().Unix(), Pages: make([][]pageMeta, len(c.shards)),
		Capacity: make([]int, len(c.shards))}
	if fl := c.flush.Load(); fl != nil {
		m.Flush = &flushMeta{Live: fl.live, CAS: fl.cas, PastLive: fl.pastLive, PastCAS: fl.pastCAS}
	}
	for i := range c.shards {
		s := &c.shards[i]
		m.Pages[i], m.Capacity[i] = make([]pageMeta, len(s.pages)), s.capacity
		for p := range s.pages {
			pg := &s.pages[p]
			if pg.kind != inFile {
				sv.Lost += pg.live
				continue
			}
			m.Pages[i][p] = pageMeta{Off: int64(pg.off), Len: len(pg.mem), Class: pg.class,
				Carved: pg.carved, CRC: crc32.Checksum(pg.mem, castagnoli)}
			sv.Items += pg.live
			sv.Bytes += int64(len(pg.mem))
		}
	}
	m.Items = sv.Items
	if err := unix.Msync(c.file.mem, unix.MS_SYNC); err != nil {
		return sv, fmt.Errorf("cache: msync of the memory file: %w", err)
	}
	body, err := json.Marshal(&m)
	if err != nil {
		return sv, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %08x\n", metaMagic, crc32.Checksum(body, castagnoli))
	b.Write(body)
	if err := writeFileSync(c.file.path+".meta", []byte(b.String())); err != nil {
		return sv, fmt.Errorf("cache: writing the memory file's metadata: %w", err)
	}
	sv.Took = time.Since(start)
	return sv, nil
}

// writeFileSync writes path through a temporary file, synced and renamed into place, then syncs
// the directory: the metadata is whole or absent.
func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Restart says how the Cache started with its memory file (the zero Restart without one).
func (c *Cache) Restart() Restart { return c.restart }
