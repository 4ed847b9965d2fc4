package harness

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is a snapshot of a process's CPU time, memory and scheduling.
type ProcSample struct {
	CPUSeconds float64 // user + system time since the process started
	RSSKB      int64   // VmRSS
	HWMKB      int64   // VmHWM: peak RSS
	// AnonKB and ShmemKB split VmRSS: private memory (heap, stacks) and
	// shared memory (a memory file on tmpfs, System V segments).
	AnonKB, ShmemKB int64
	Threads         int // threads alive now
	// VolCS and InvolCS are the voluntary and nonvoluntary context
	// switches of every thread alive now, summed (/proc/<pid>/status counts
	// only the main thread's; threads that exited are not counted).
	VolCS, InvolCS int64
}

// ReadProc samples /proc/<pid>/stat, /proc/<pid>/status and the status of
// each of its threads.
func ReadProc(pid int) (ProcSample, error) {
	var s ProcSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	if s.CPUSeconds, err = parseStatCPU(stat); err != nil {
		return s, fmt.Errorf("harness: /proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	st := parseStatus(status)
	s.RSSKB, s.HWMKB, s.Threads = st.RSSKB, st.HWMKB, st.Threads
	s.AnonKB, s.ShmemKB = st.AnonKB, st.ShmemKB
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the thread exited meanwhile
		}
		ts := parseStatus(b)
		s.VolCS += ts.VolCS
		s.InvolCS += ts.InvolCS
	}
	return s, nil
}

// parseStatCPU returns utime+stime in seconds from a /proc/<pid>/stat line.
func parseStatCPU(stat []byte) (float64, error) {
	// The command name (field 2) may contain spaces and parentheses: the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat line")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad cpu times")
	}
	return float64(ut+st) / clockTicks, nil
}

// statusFields are the fields of a /proc/<pid>/status (or a thread's
// /proc/<pid>/task/<tid>/status) that the harness reads.
type statusFields struct {
	RSSKB, HWMKB    int64
	AnonKB, ShmemKB int64
	Threads         int
	VolCS, InvolCS  int64
}

// parseStatus reads the fields the harness needs from a status file;
// absent or malformed fields stay 0.
func parseStatus(b []byte) statusFields {
	var f statusFields
	for line := range strings.Lines(string(b)) {
		name, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "VmRSS":
			f.RSSKB = parseKB(val)
		case "VmHWM":
			f.HWMKB = parseKB(val)
		case "RssAnon":
			f.AnonKB = parseKB(val)
		case "RssShmem":
			f.ShmemKB = parseKB(val)
		case "Threads":
			f.Threads = int(parseKB(val))
		case "voluntary_ctxt_switches":
			f.VolCS = parseKB(val)
		case "nonvoluntary_ctxt_switches":
			f.InvolCS = parseKB(val)
		}
	}
	return f
}

// parseKB parses "   1234 kB" (or a bare number) into 1234.
func parseKB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n
}
