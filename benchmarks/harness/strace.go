package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoStrace marks a phase that asked for syscall counts where strace
// cannot run; the phase is measured without them.
var ErrNoStrace = errors.New("harness: strace unavailable")

// straceAttachWait bounds how long strace may take to attach to every
// thread; straceStopWait how long it may take to detach and write its
// summary.
const (
	straceAttachWait = 10 * time.Second
	straceStopWait   = 15 * time.Second
)

// straceSession counts the syscalls of every thread of a process with
// `strace -c -f -p` from start to stop.
type straceSession struct {
	cmd    *exec.Cmd
	out    string      // the summary file
	log    *tailBuffer // strace's stderr
	exited chan struct{}
}

// startStrace attaches strace to pid and returns once it has attached
// (its summary goes to a file in dir).
func startStrace(pid int, dir string) (*straceSession, error) {
	bin, err := exec.LookPath("strace")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoStrace, err)
	}
	s := &straceSession{out: filepath.Join(dir, "strace.txt"), log: &tailBuffer{max: 4 << 10}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "-c", "-f", "-o", s.out, "-p", strconv.Itoa(pid))
	// If the harness dies, strace detaches (SIGTERM) instead of lingering.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoStrace, err)
	}
	attached := make(chan struct{})
	go func() {
		// "strace: Process N attached with K threads"
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.log, line)
			if !once && strings.Contains(line, " attached") {
				once = true
				close(attached)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-attached:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("%w: strace exited: %s", ErrNoStrace, lastLines(s.log.String(), 5))
	case <-time.After(straceAttachWait):
		s.kill()
		return nil, fmt.Errorf("%w: strace did not attach within %v: %s", ErrNoStrace, straceAttachWait,
			lastLines(s.log.String(), 5))
	}
}

// stop detaches strace (SIGINT) and returns the syscall counts of its
// summary, with "total" their sum.
func (s *straceSession) stop() (map[string]int64, error) {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(straceStopWait):
		s.kill()
		return nil, fmt.Errorf("%w: strace did not detach within %v", ErrNoStrace, straceStopWait)
	}
	b, err := os.ReadFile(s.out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %s", ErrNoStrace, err, lastLines(s.log.String(), 5))
	}
	if strings.TrimSpace(string(b)) == "" {
		return map[string]int64{"total": 0}, nil // strace -c writes nothing when nothing was called
	}
	return parseStraceSummary(string(b))
}

func (s *straceSession) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// parseStraceSummary reads the table `strace -c` writes:
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 45.00    0.001000          10       100           write
//	------ ----------- ----------- --------- --------- ----------------
//	100.00    0.002000           5       200        10 total
//
// Columns are found from the dashes under the header, so empty cells (no
// errors) do not shift them. It returns calls by syscall name, "total"
// included.
func parseStraceSummary(text string) (map[string]int64, error) {
	lines := strings.Split(text, "\n")
	head := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "% time") && i+1 < len(lines) {
			head = i
			break
		}
	}
	if head < 0 {
		return nil, fmt.Errorf("harness: no strace summary header in %q", firstLine(text))
	}
	spans := dashSpans(lines[head+1])
	callsCol, nameCol := -1, len(spans)-1
	for i, sp := range spans {
		if field(lines[head], sp) == "calls" {
			callsCol = i
		}
	}
	if callsCol < 0 || nameCol <= callsCol {
		return nil, fmt.Errorf("harness: strace summary header %q has no calls column", lines[head])
	}
	out := map[string]int64{}
	for _, l := range lines[head+2:] {
		if strings.HasPrefix(strings.TrimSpace(l), "---") || strings.TrimSpace(l) == "" {
			continue
		}
		name := strings.TrimSpace(l[min(spans[nameCol][0], len(l)):])
		calls, err := strconv.ParseInt(field(l, spans[callsCol]), 10, 64)
		if name == "" || err != nil {
			return nil, fmt.Errorf("harness: strace summary line %q", l)
		}
		out[name] += calls
	}
	if _, ok := out["total"]; !ok {
		return nil, fmt.Errorf("harness: strace summary without a total line")
	}
	return out, nil
}

// dashSpans returns the [start, end) byte ranges of the runs of '-' in l.
func dashSpans(l string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(l); {
		if l[i] != '-' {
			i++
			continue
		}
		j := i
		for j < len(l) && l[j] == '-' {
			j++
		}
		spans = append(spans, [2]int{i, j})
		i = j
	}
	return spans
}

// field returns l's text in span, trimmed ("" past the line's end).
func field(l string, sp [2]int) string {
	if sp[0] >= len(l) {
		return ""
	}
	return strings.TrimSpace(l[sp[0]:min(sp[1], len(l))])
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
