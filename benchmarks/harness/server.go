package harness

import (
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

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{} // closed when the process has been reaped
	werr   error         // Wait's result, valid after exited is closed
}

// startTimeout bounds how long a server may take to answer "version".
const startTimeout = 15 * time.Second

// StartServer starts bin as target t on a free 127.0.0.1 port and waits until
// it answers. cpus, when not empty, pins it with `taskset -c cpus`.
func StartServer(ctx context.Context, bin string, t Target, lim ServerLimits, cpus string) (*Server, error) {
	var lastErr error
	for range 3 { // a free port can be taken between probe and bind
		port, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		s, err := startOnce(ctx, bin, t, lim, cpus, port)
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

func startOnce(ctx context.Context, bin string, t Target, lim ServerLimits, cpus string, port int) (*Server, error) {
	argv := append([]string{bin}, t.Args(port, lim)...)
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	s := &Server{
		Target: t,
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Args:   argv,
		out:    &tailBuffer{max: 8 << 10},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	// If the harness dies, its servers die with it instead of lingering.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", t.Name, err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		s.werr = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(startTimeout)
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
			s.Version = v
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("harness: %s not answering on %s after %v: %s",
				t.Name, s.Addr, startTimeout, lastLines(s.out.String(), 10))
		}
		time.Sleep(20 * time.Millisecond)
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

// Output returns the tail of the server's stdout and stderr.
func (s *Server) Output() string { return s.out.String() }

// tailBuffer keeps the last max bytes written to it. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte // guarded by mu
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
