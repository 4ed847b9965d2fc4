package harness

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tandemcache/tandem/benchmarks/internal/freeport"
	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// Server is one running target process, owned by the harness.
type Server struct {
	Target  Target
	Addr    string   // 127.0.0.1:port
	PID     int      // the server's own PID (taskset execs in place)
	Args    []string // full command line
	Version string   // from the "version" command
	// Started is when the process was started; Ready when it first
	// answered "version" (probed every probeEvery).
	Started, Ready time.Time

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed when the process has been reaped
	werr   error         // Wait's result, valid after exited is closed
}

// startTimeout bounds how long a server may take to answer "version".
const startTimeout = 15 * time.Second

// probeEvery is the pause between two "version" probes of a starting
// server: the resolution of Server.Ready.
const probeEvery = 5 * time.Millisecond

// logMarkers are the log messages whose first appearance a Server
// timestamps (Server.Seen): tandem's start and warm-restart lines.
var logMarkers = []string{"tandem listening", "warm restart:", "cold start:", "memory file saved"}

// StartServer starts bin as target t on a free 127.0.0.1 port and waits until
// it answers. cpus, when not empty, pins it with `taskset -c cpus`.
func StartServer(ctx context.Context, bin string, t Target, lim ServerLimits, cpus string) (*Server, error) {
	var lastErr error
	for range 3 { // a free port can be taken between probe and bind
		port, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		s, err := startOnce(ctx, bin, t, lim, cpus, port, startTimeout)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// startOnce starts bin as t on port and waits up to timeout until it
// answers.
func startOnce(ctx context.Context, bin string, t Target, lim ServerLimits, cpus string, port int, timeout time.Duration) (*Server, error) {
	argv := append([]string{bin}, t.Args(port, lim)...)
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	s := &Server{
		Target: t,
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Args:   argv,
		out:    &tailBuffer{max: 8 << 10, markers: logMarkers},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// If the harness dies, its servers die with it instead of lingering.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.Started = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", t.Name, err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.werr = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("harness: %s exited at start (%v): %s", t.Name, s.werr, lastLines(s.out.String(), 10))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		default:
		}
		if v, err := probe(s.Addr); err == nil {
			s.Version, s.Ready = v, time.Now()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("harness: %s not answering on %s after %v: %s",
				t.Name, s.Addr, timeout, lastLines(s.out.String(), 10))
		}
		time.Sleep(probeEvery)
	}
}

// probe connects and asks for the version.
func probe(addr string) (string, error) {
	c, err := loadgen.Dial(addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Version()
}

// Flush sends flush_all to the server.
func (s *Server) Flush() error {
	c, err := loadgen.Dial(s.Addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.FlushAll()
}

// Stats sends "stats" and returns the named fields that parse as numbers;
// fields the server does not report are left out.
func (s *Server) Stats(names []string) (map[string]float64, error) {
	c, err := loadgen.Dial(s.Addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	all, err := c.Stats()
	if err != nil {
		return nil, err
	}
	return pickStats(all, names), nil
}

// pickStats keeps the named numeric fields of a stats reply.
func pickStats(all map[string]string, names []string) map[string]float64 {
	out := make(map[string]float64, len(names))
	for _, n := range names {
		if v, err := strconv.ParseFloat(all[n], 64); err == nil {
			out[n] = v
		}
	}
	return out
}

// Alive reports whether the process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop ends the process by its PID: SIGTERM, then SIGKILL after 5 s.
func (s *Server) Stop() {
	if !s.Alive() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		return
	case <-time.After(5 * time.Second):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// StopWith sends sig and waits up to timeout for the process to exit; then
// it kills it. It returns how long the exit took from the signal and
// whether the process exited by itself.
func (s *Server) StopWith(sig syscall.Signal, timeout time.Duration) (time.Duration, bool) {
	if !s.Alive() {
		return 0, false
	}
	start := time.Now()
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
		return time.Since(start), true
	case <-time.After(timeout):
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return time.Since(start), false
}

// Seen returns when the output first contained marker (one of
// logMarkers).
func (s *Server) Seen(marker string) (time.Time, bool) { return s.out.seen(marker) }

// Output returns the tail of the server's stdout and stderr.
func (s *Server) Output() string { return s.out.String() }

// tailBuffer keeps the last max bytes written to it, and when each of its
// markers first appeared (completed by a write). Safe for concurrent use.
type tailBuffer struct {
	mu      sync.Mutex
	max     int
	markers []string
	b       []byte               // guarded by mu
	at      map[string]time.Time // guarded by mu
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := len(t.b)
	t.b = append(t.b, p...)
	for _, m := range t.markers {
		// Look from len(m)-1 bytes before p: a line may arrive in pieces
		// (the pipe's reader sees what was written so far).
		from := max(prev-len(m)+1, 0)
		if _, ok := t.at[m]; !ok && bytes.Contains(t.b[from:], []byte(m)) {
			if t.at == nil {
				t.at = map[string]time.Time{}
			}
			t.at[m] = now
		}
	}
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) seen(marker string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.at[marker]
	return at, ok
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
