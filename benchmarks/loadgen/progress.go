package loadgen

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// startProgress prints a progress line every ProgressEvery until the
// returned function is called; that call prints the final line and waits
// for the printer to exit.
func (st *run) startProgress(start time.Time) (done func()) {
	out := st.cfg.Progress
	if out == nil {
		return func() {}
	}
	every := st.cfg.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	// '\r' rewrites the line on a terminal; in a log file it would leave
	// one endless line.
	begin, end := "", "\n"
	if IsTerminal(out) {
		begin, end = "\r", "   "
	}
	quit := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(every)
		defer t.Stop()
		var lastReq int64
		last := start
		line := func(now time.Time) {
			c := &st.cnt
			req := c.gets.Load() + c.sets.Load()
			rate := float64(req-lastReq) / now.Sub(last).Seconds()
			hits, misses := c.hits.Load(), c.misses.Load()
			hr := 0.0
			if hits+misses > 0 {
				hr = float64(hits) / float64(hits+misses)
			}
			fmt.Fprintf(out, "%s[%6.1fs] %10d req %9.0f req/s  hit %5.1f%%  errors %d%s",
				begin, now.Sub(start).Seconds(), req, rate, 100*hr, c.errors().Total(), end)
			lastReq, last = req, now
		}
		for {
			select {
			case now := <-t.C:
				line(now)
			case <-quit:
				line(time.Now())
				if begin != "" {
					fmt.Fprintln(out)
				}
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}

// IsTerminal reports whether w is a terminal (an *os.File whose descriptor
// answers the terminal ioctl).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
