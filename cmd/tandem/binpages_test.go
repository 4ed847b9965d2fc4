package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestDroppableMappings(t *testing.T) {
	// Each mapping's fields: Anonymous and Locked in kB (smaps has more).
	entry := func(header string, anon, locked int) string {
		return header + "\nRss:                 100 kB\nAnonymous:      " + strconv.Itoa(anon) +
			" kB\nLocked:         " + strconv.Itoa(locked) + " kB\nVmFlags: rd ex mr mw me dw sd\n"
	}
	smaps := []byte(entry("00400000-00839000 r-xp 00000000 fe:00 9978580                            /usr/bin/tandem", 0, 0) +
		entry("00839000-00cbf000 r--p 00439000 fe:00 9978580                            /usr/bin/tandem", 0, 0) +
		entry("00cbf000-00d1f000 rw-p 008bf000 fe:00 9978580                            /usr/bin/tandem", 0, 0) +
		entry("00d1f000-02d63000 rw-p 00000000 00:00 0", 176, 0) +
		entry("01000000-01001000 r--p 00000000 fe:01 9978580                            /other/device/same/inode", 0, 0) +
		entry("02000000-02001000 r--p 00000000 fe:00 1234                               /usr/lib/other", 0, 0) +
		entry("03000000-03001000 r-xp 00000000 fe:00 9978580                            /usr/bin/tandem (deleted)", 0, 0) +
		entry("04000000-04001000 rwxp 00000000 fe:00 9978580                            /usr/bin/tandem", 0, 0) +
		entry("05000000-05100000 r--p 00500000 fe:00 9978580                            /usr/bin/tandem", 8, 0) + // relocated (PIE)
		entry("06000000-06001000 r-xp 00600000 fe:00 9978580                            /usr/bin/tandem", 0, 4) + // locked
		"garbage\n" +
		entry("07000000-06000000 r--p 00000000 fe:00 9978580 /usr/bin/tandem", 0, 0) + // end before start
		entry("08000000-08001000 r--p 00800000 fe:00 9978580                            /usr/bin/tandem", 0, 0))
	got := droppableMappings(smaps, 0xfe, 0, 9978580)
	want := []mapping{{0x400000, 0x839000}, {0x839000, 0xcbf000}, {0x3000000, 0x3001000}, {0x8000000, 0x8001000}}
	if !slices.Equal(got, want) {
		t.Errorf("droppableMappings = %x, want %x", got, want)
	}
}

// TestDropBinaryPages drops this test binary's read-only pages and checks,
// in /proc/self/smaps, that what stays resident of them is far less than
// before (only what ran since faulted back).
func TestDropBinaryPages(t *testing.T) {
	before, _ := readOnlyResident(t, os.Getpid())
	n, err := dropBinaryPages()
	if err != nil || n == 0 {
		t.Fatalf("dropBinaryPages = %d, %v", n, err)
	}
	after, _ := readOnlyResident(t, os.Getpid())
	t.Logf("%d bytes of mappings dropped; resident %d kB -> %d kB", n, before, after)
	if after*2 > before {
		t.Errorf("the executable's read-only pages: %d kB resident before, %d kB after the drop", before, after)
	}
	// Marked for random access (smaps' "rr"): no readahead brings back the
	// blocks around a page the server uses again.
	dropped, smaps, err := ownDroppableMappings()
	if err != nil {
		t.Fatal(err)
	}
	var in bool
	for line := range bytes.Lines(smaps) {
		if m, _, _, _, err := parseMapsLine(line); err == nil {
			in = slices.Contains(dropped, m)
			continue
		}
		if f := bytes.Fields(line); in && len(f) > 0 && string(f[0]) == "VmFlags:" && !bytes.Contains(line, []byte(" rr")) {
			t.Errorf("a dropped mapping is not marked for random access: %s", line)
		}
	}
}

// TestDropFromPageCache writes a file (its pages dirty in the page cache, as
// a binary's just after it is built) and checks that dropFromPageCache leaves
// none of it cached.
func TestDropFromPageCache(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs (or unknown: %v), whose pages cannot be dropped", dir, err)
	}
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, bytes.Repeat([]byte("tandem\n"), 1<<19), 0o600); err != nil {
		t.Fatal(err)
	}
	before := cachedKB(t, path)
	if err := dropFromPageCache(path); err != nil {
		t.Fatal(err)
	}
	after := cachedKB(t, path)
	t.Logf("page cache: %d kB -> %d kB", before, after)
	if after*4 > before {
		t.Errorf("%d kB of %d still cached after dropFromPageCache", after, before)
	}
}

// cachedKB returns how much of the file at path the page cache holds
// (mincore over a mapping of it that is never touched).
func cachedKB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	kb := 0
	for _, v := range vec {
		if v&1 != 0 {
			kb += page >> 10
		}
	}
	return kb
}

// TestServerDropsBinaryPages checks the running server: once it listens,
// what stays resident of its executable's read-only mappings is well under
// what start-up left (~85%), and with -k nothing is dropped.
func TestServerDropsBinaryPages(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		below bool
	}{
		{"dropped", nil, true},
		{"kept with -k", []string{"-k"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, "pool", tc.args...)
			// The drop follows the "listening" line startServer waits for:
			// give it up to 5 s when it is expected, 300 ms otherwise.
			deadline := time.Now().Add(300 * time.Millisecond)
			if tc.below {
				deadline = time.Now().Add(5 * time.Second)
			}
			for {
				rss, size := readOnlyResident(t, s.cmd.Process.Pid)
				below := rss*10 < size*6
				if below == tc.below && (below || time.Now().After(deadline)) {
					t.Logf("%d of %d kB of the executable's read-only mappings resident", rss, size)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d kB resident: under 60%% = %v, want %v", rss, size, below, tc.below)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}

// readOnlyResident sums Rss and Size, in kB, of process pid's read-only
// mappings of its executable.
func readOnlyResident(t *testing.T, pid int) (rss, size int) {
	t.Helper()
	dir := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(dir + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile(dir + "/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for line := range bytes.Lines(smaps) {
		f := bytes.Fields(line)
		switch {
		case len(f) >= 6 && bytes.Contains(f[0], []byte("-")):
			in = string(f[5]) == exe && (string(f[1]) == "r-xp" || string(f[1]) == "r--p")
		case in && len(f) >= 2 && (string(f[0]) == "Rss:" || string(f[0]) == "Size:"):
			kb, _ := strconv.Atoi(string(f[1]))
			if string(f[0]) == "Rss:" {
				rss += kb
			} else {
				size += kb
			}
		}
	}
	if size == 0 {
		t.Fatalf("%s: no read-only mapping of the executable %s", dir, exe)
	}
	return rss, size
}

// TestPIEBuild builds tandem position-independent, as distributions build
// Go programs, where the loader relocates part of the read-only data: the
// server must keep those pages (droppableMappings) and go on serving after
// the drop (without the check it died at once).
func TestPIEBuild(t *testing.T) {
	needPackagingTests(t)
	bin := filepath.Join(t.TempDir(), "tandem-pie")
	if b, err := exec.Command("go", "build", "-buildmode=pie", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=pie: %v\n%s", err, b)
	}
	s := startServerArgs(t, bin, "-p", "0", "-l", "127.0.0.1", "-m", "16")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if rss, size := readOnlyResident(t, s.cmd.Process.Pid); rss*10 < size*8 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("%d of %d kB of the executable's read-only mappings still resident after 5 s", rss, size)
		}
	}
	time.Sleep(200 * time.Millisecond)
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const want = "STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n"
	for range 10 {
		if got := roundTrip(t, c, "set k 0 0 1\r\nv\r\nget k\r\n", len(want)); got != want {
			t.Fatalf("PIE build after the drop: %q, want %q", got, want)
		}
	}
}
