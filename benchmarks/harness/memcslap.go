package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// clientMemcslap is the key of memcslap's binary in the runner's bins, next
// to the server kinds.
const clientMemcslap = "memcslap"

// MemcslapLoad runs libmemcached's memcslap (Debian's libmemcached-tools), a
// lean C load generator independent of the harness's own, instead of a
// loadgen phase: the cross-check of the harness's figures that an
// independent client gives.
type MemcslapLoad struct {
	Test        string `json:"test"`        // -t: get or set
	Concurrency int    `json:"concurrency"` // -c: threads, each with one blocking connection
	Execute     int    `json:"execute"`     // -e: requests per thread (get: the keys it stores first too)
}

// args returns memcslap's command line (without the binary) against addr.
func (l MemcslapLoad) args(addr string) []string {
	return []string{"-s", addr, "-c", strconv.Itoa(l.Concurrency), "-t", l.Test, "-e", strconv.Itoa(l.Execute)}
}

// memcslapResult is what memcslap's report says.
type memcslapResult struct {
	Preloaded int     // keys set before the timed part ("Time to set N keys:")
	Requests  int     // requests of the timed part ("Time to get N keys by T threads:")
	Seconds   float64 // its duration
}

var (
	memcslapTimed   = regexp.MustCompile(`Time to (get|set)\s+(\d+) keys by\s+\d+ threads:\s+([0-9.]+) seconds`)
	memcslapPreload = regexp.MustCompile(`Time to set\s+(\d+) keys:\s+([0-9.]+) seconds`)
)

// parseMemcslap reads memcslap's report for test (get or set).
func parseMemcslap(out, test string) (memcslapResult, error) {
	var res memcslapResult
	m := memcslapTimed.FindStringSubmatch(out)
	if m == nil || m[1] != test {
		return res, fmt.Errorf("no %q timing in memcslap's report: %q", test, lastLines(out, 3))
	}
	res.Requests, _ = strconv.Atoi(m[2])
	res.Seconds, _ = strconv.ParseFloat(m[3], 64)
	if res.Requests <= 0 || res.Seconds <= 0 {
		return res, fmt.Errorf("memcslap timed %d requests in %v s", res.Requests, res.Seconds)
	}
	if p := memcslapPreload.FindStringSubmatch(out); p != nil {
		res.Preloaded, _ = strconv.Atoi(p[1])
	}
	return res, nil
}

// memcslap runs a memcslap phase. Its rate is memcslap's own (the timed
// part); the server's CPU per request counts every request the server saw
// in the phase (the get test's preload too), and the client's CPU is
// memcslap's.
func (r *runner) memcslap(ctx context.Context, srv *Server, l MemcslapLoad, m *Measurement) error {
	bin := r.bins[clientMemcslap]
	if bin == "" {
		return fmt.Errorf("%w: no memcslap", ErrUnavailable)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.PhaseCap)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, l.args(srv.Addr)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			m.HitHardCap = true
		}
		return fmt.Errorf("memcslap %v: %v: %s", l.args(srv.Addr), err, lastLines(out.String(), 5))
	}
	res, err := parseMemcslap(out.String(), l.Test)
	if err != nil {
		return err
	}
	m.ElapsedSec = math.Round(wall*1e6) / 1e6
	m.Requests = int64(res.Preloaded + res.Requests)
	m.ReqPerSec = round1(float64(res.Requests) / res.Seconds)
	if ps := cmd.ProcessState; ps != nil && wall > 0 {
		m.ClientCPUPct = 100 * (ps.UserTime() + ps.SystemTime()).Seconds() / wall
	}
	return nil
}
