package harness

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is a snapshot of a process's CPU time and memory.
type ProcSample struct {
	CPUSeconds float64 // user + system time since the process started
	RSSKB      int64   // VmRSS
	HWMKB      int64   // VmHWM: peak RSS
}

// ReadProc samples /proc/<pid>/stat and /proc/<pid>/status.
func ReadProc(pid int) (ProcSample, error) {
	var s ProcSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may contain spaces and parentheses: the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("harness: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return s, fmt.Errorf("harness: short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("harness: bad cpu times in /proc/%d/stat", pid)
	}
	s.CPUSeconds = float64(ut+st) / clockTicks

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(status)) {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "VmRSS":
			s.RSSKB = parseKB(val)
		case "VmHWM":
			s.HWMKB = parseKB(val)
		}
	}
	return s, nil
}

// parseKB parses "   1234 kB".
func parseKB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n
}
