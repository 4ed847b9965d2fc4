package loadgen

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// Errors counts failed requests by cause.
type Errors struct {
	Server   int64  `json:"server_error"` // SERVER_ERROR replies
	Client   int64  `json:"client_error"` // CLIENT_ERROR replies
	Generic  int64  `json:"error"`        // ERROR replies
	Unstored int64  `json:"unstored"`     // set answered other than STORED
	Verify   int64  `json:"verify"`       // value or key read differs from what was set
	Protocol int64  `json:"protocol"`     // malformed replies (connection dropped)
	IO       int64  `json:"io"`           // read/write/dial failures (connection dropped)
	First    string `json:"first,omitempty"`
}

// Total returns the sum of all counters.
func (e Errors) Total() int64 {
	return e.Server + e.Client + e.Generic + e.Unstored + e.Verify + e.Protocol + e.IO
}

// Result is the outcome of one Run.
type Result struct {
	Config     Config    `json:"config"`
	Start      time.Time `json:"start"`
	ElapsedSec float64   `json:"elapsed_sec"`
	Requests   int64     `json:"requests"` // replies received, all kinds
	ReqPerSec  float64   `json:"req_per_sec"`
	Gets       int64     `json:"gets"`
	Sets       int64     `json:"sets"`
	Hits       int64     `json:"hits"`
	Misses     int64     `json:"misses"`
	HitRatio   float64   `json:"hit_ratio"` // hits / gets answered
	BytesRead  int64     `json:"value_bytes_read"`
	BytesSent  int64     `json:"value_bytes_written"`
	Errors     Errors    `json:"errors"`
	// Latency holds one summary per operation ("get", "set") that ran.
	Latency    map[string]Summary `json:"latency"`
	HitHardCap bool               `json:"hit_hard_cap"`
	ConnsLost  int                `json:"conns_lost"` // workers that gave up after repeated failures
}

// Elapsed returns the measured wall time.
func (r *Result) Elapsed() time.Duration {
	return time.Duration(r.ElapsedSec * float64(time.Second))
}

// WriteTable writes a human-readable summary of r to w.
func (r *Result) WriteTable(w io.Writer) error {
	c := r.Config
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target %s\tconns %d\tdepth %d\tworkload %s\t\n", c.Addr, c.Conns, c.Depth, c.Workload)
	fmt.Fprintf(tw, "keys %d (%s)\tvalues %v B\tset:get %d:%d\tverify %v\t\n",
		c.Keys, c.Dist, c.ValueSizes, c.SetRatio, c.GetRatio, c.Verify)
	fmt.Fprintf(tw, "elapsed %.3f s\trequests %d\tthroughput %.0f req/s\thit ratio %.4f\t\n",
		r.ElapsedSec, r.Requests, r.ReqPerSec, r.HitRatio)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "op\tcount\tmean us\tp50 us\tp90 us\tp99 us\tp99.9 us\tmax us\t")
	for _, op := range []string{"get", "set"} {
		s, ok := r.Latency[op]
		if !ok || s.Count == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n",
			op, s.Count, s.MeanUs, s.P50Us, s.P90Us, s.P99Us, s.P999Us, s.MaxUs)
	}
	fmt.Fprintln(tw)
	e := r.Errors
	fmt.Fprintf(tw, "errors %d\tserver %d\tclient %d\terror %d\tunstored %d\tverify %d\tprotocol %d\tio %d\t\n",
		e.Total(), e.Server, e.Client, e.Generic, e.Unstored, e.Verify, e.Protocol, e.IO)
	if e.First != "" {
		fmt.Fprintf(tw, "first error: %s\t\n", e.First)
	}
	if r.HitHardCap {
		fmt.Fprintf(tw, "stopped by the hard cap (%s)\t\n", c.HardCap)
	}
	if r.ConnsLost > 0 {
		fmt.Fprintf(tw, "connections lost: %d\t\n", r.ConnsLost)
	}
	return tw.Flush()
}
