package harness

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine records where and how a run happened.
type Machine struct {
	Hostname    string `json:"hostname"`
	CPUModel    string `json:"cpu_model"`
	NumCPU      int    `json:"num_cpu"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	Kernel      string `json:"kernel"`
	MemTotal    string `json:"mem_total"`
	GoVersion   string `json:"go_version"`   // the harness's runtime
	GoToolchain string `json:"go_toolchain"` // `go version`, which builds tandem
	Source
	Command []string `json:"command"`
	Date    string   `json:"date"`
}

// ReadMachine gathers the machine description (the Source is filled by
// the caller); missing facts stay empty.
func ReadMachine(ctx context.Context) Machine {
	m := Machine{
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		Command:    os.Args,
		Date:       time.Now().UTC().Format(time.RFC3339),
	}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				m.MemTotal = strings.TrimSpace(v)
			}
		}
	}
	m.GoToolchain = commandOutput(ctx, "", "go", "version")
	return m
}

// commandOutput runs a short command and returns its trimmed output, or "".
func commandOutput(ctx context.Context, dir, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
