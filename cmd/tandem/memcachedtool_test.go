package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tandemcache/tandem/cmd/testenv"
)

// Issue #26 item 3: memcached-tool (Debian's memcached package ships it)
// and memcstat show tandem as they show memcached: every column of
// memcached-tool's display, stats and settings modes filled, and every
// field memcstat prints for memcached printed for tandem.

// memcachedToolPath is where Debian's memcached package installs the tool.
const memcachedToolPath = "/usr/share/memcached/scripts/memcached-tool"

// needMemcachedTool returns the perl and memcached-tool paths, skipping (or
// failing under TANDEM_REQUIRE_TOOLS) when either is missing.
func needMemcachedTool(t *testing.T) (perl, tool string) {
	t.Helper()
	perl = testenv.NeedTool(t, "perl", "perl")
	testenv.NeedTool(t, "memcached", "memcached") // the package that ships the tool
	if _, err := os.Stat(memcachedToolPath); err != nil {
		t.Fatalf("%s missing although memcached is installed: %v", memcachedToolPath, err)
	}
	return perl, memcachedToolPath
}

// toolFill stores items of several sizes, so that several classes hold
// items, and reads some of them.
func toolFill(t *testing.T, addr string) int {
	t.Helper()
	var req strings.Builder
	n := 0
	for _, size := range []int{10, 100, 1000, 5000, 50000} {
		for i := range 20 {
			req.WriteString("set k" + strconv.Itoa(size) + "-" + strconv.Itoa(i) + " 0 0 " + strconv.Itoa(size) + "\r\n")
			req.WriteString(strings.Repeat("v", size) + "\r\n")
			n++
		}
	}
	req.WriteString("get k10-1 k1000-2 nope\r\n")
	if _, _, err := exchange(addr, req.String()); err != nil {
		t.Fatal(err)
	}
	return n
}

// runTool runs memcached-tool addr mode and returns its output.
func runTool(t *testing.T, perl, tool, addr, mode string) string {
	t.Helper()
	out, err := exec.Command(perl, tool, addr, mode).CombinedOutput()
	if err != nil {
		t.Fatalf("memcached-tool %s %s: %v\n%s", addr, mode, err, out)
	}
	return string(out)
}

// displayRow is one row of memcached-tool's display mode: class, item size,
// max age, pages, count, full?, evicted, evict time, OOM.
var displayRow = regexp.MustCompile(`^\s*(\d+)\s+(\d+B|\d+\.\dK)\s+(\d+)s\s+(\d+)\s+(\d+)\s+(yes|no)\s+(\d+)\s+(\d+)\s+(\d+)$`)

// checkDisplay checks that display prints its header and one full row per
// class in use, whose counts add up to items.
func checkDisplay(t *testing.T, who, out string, items int) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], "Item_Size") {
		t.Fatalf("%s: display prints no rows:\n%s", who, out)
	}
	count := 0
	for _, l := range lines[1:] {
		m := displayRow.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s: display row %q has an empty or malformed column", who, l)
			continue
		}
		if m[4] == "0" || m[2] == "0B" {
			t.Errorf("%s: display row %q: a class with items but no pages or chunk size", who, l)
		}
		n, _ := strconv.Atoi(m[5])
		count += n
	}
	if count != items {
		t.Errorf("%s: display counts %d items, want %d:\n%s", who, count, items, out)
	}
}

// toolFields returns the field names of memcached-tool's stats or settings
// output (its first line is a header) with their values.
func toolFields(out string) map[string]string {
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) == 2 {
			fields[f[0]] = f[1]
		} else if len(f) == 1 {
			fields[f[0]] = ""
		}
	}
	return fields
}

// memcstatFields returns the field names of memcstat's output with their
// values ("\tname: value" lines).
func memcstatFields(out string) map[string]string {
	fields := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if name, value, ok := strings.Cut(strings.TrimPrefix(l, "\t"), ": "); ok && strings.HasPrefix(l, "\t") {
			fields[name] = value
		}
	}
	return fields
}

// checkFieldsCovered fails for every field memcached prints that tandem
// does not, or prints empty.
func checkFieldsCovered(t *testing.T, what string, tandem, memcached map[string]string) {
	t.Helper()
	var missing []string
	for name := range memcached {
		if v, ok := tandem[name]; !ok || v == "" {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s: fields memcached fills that tandem lacks or leaves empty: %v", what, missing)
	}
}

// TestMemcachedToolLikeMemcached runs memcached-tool's display, stats and
// settings modes and memcstat against memcached 1.6.18 and tandem (every
// mode) holding the same items.
func TestMemcachedToolLikeMemcached(t *testing.T) {
	perl, tool := needMemcachedTool(t)
	memcstat := testenv.NeedTool(t, "memcstat", "libmemcached-tools")
	mc := testenv.StartMemcached(t)
	items := toolFill(t, mc.Addr)
	checkDisplay(t, "memcached", runTool(t, perl, tool, mc.Addr, "display"), items)
	mstats := toolFields(runTool(t, perl, tool, mc.Addr, "stats"))
	msettings := toolFields(runTool(t, perl, tool, mc.Addr, "settings"))
	mout, err := exec.Command(memcstat, "--servers="+mc.Addr).CombinedOutput()
	if err != nil {
		t.Fatalf("memcstat on memcached: %v\n%s", err, mout)
	}
	mcstat := memcstatFields(string(mout))
	if len(mstats) < 50 || len(msettings) < 50 || len(mcstat) < 50 {
		t.Fatalf("memcached: %d stats, %d settings, %d memcstat fields: the parsing is wrong", len(mstats), len(msettings), len(mcstat))
	}
	forModes(t, func(t *testing.T, mode string) {
		s := startServer(t, mode)
		items := toolFill(t, s.Addr)
		// The default mode, with no mode argument, is display.
		out, err := exec.Command(perl, tool, s.Addr).CombinedOutput()
		if err != nil {
			t.Fatalf("memcached-tool %s: %v\n%s", s.Addr, err, out)
		}
		checkDisplay(t, "tandem", string(out), items)
		checkFieldsCovered(t, "memcached-tool stats", toolFields(runTool(t, perl, tool, s.Addr, "stats")), mstats)
		checkFieldsCovered(t, "memcached-tool settings", toolFields(runTool(t, perl, tool, s.Addr, "settings")), msettings)
		tout, err := exec.Command(memcstat, "--servers="+s.Addr).CombinedOutput()
		if err != nil {
			t.Fatalf("memcstat on tandem: %v\n%s", err, tout)
		}
		checkFieldsCovered(t, "memcstat", memcstatFields(string(tout)), mcstat)
	})
}
