package harness

import (
	"fmt"
	"time"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// Profile scales every scenario: Quick runs in seconds (CI), Default in
// minutes on a 2-core machine, Full uses the published benchmarks' counts.
type Profile string

// Profiles.
const (
	Quick   Profile = "quick"
	Default Profile = "default"
	Full    Profile = "full"
)

// pick returns the value for p.
func pick[T any](p Profile, quick, def, full T) T {
	switch p {
	case Quick:
		return quick
	case Full:
		return full
	}
	return def
}

// Phase is one loadgen run inside a point.
type Phase struct {
	Name   string         `json:"name"`
	Report bool           `json:"report"` // false: setup (preload), left out of tables
	Flush  bool           `json:"flush"`  // flush_all before the phase
	Load   loadgen.Config `json:"load"`   // Addr, HardCap and Progress are set by the runner
	// Stats names numeric fields of the server's "stats" reply to record
	// after the phase (e.g. curr_items, bytes).
	Stats []string `json:"stats,omitempty"`
	// Strace counts the server's syscalls (strace -c -f, every thread)
	// during Load. strace slows the server many times over: keep such a
	// phase's request count small.
	Strace bool `json:"strace,omitempty"`
	// Hostile or SlowReader, when set, runs instead of Load: the
	// robustness phases of issue #17.
	Hostile    *HostileLoad    `json:"hostile,omitempty"`
	SlowReader *SlowReaderLoad `json:"slow_reader,omitempty"`
	// Trace, when set, replays a cache trace instead of Load (issue #24).
	Trace *TraceLoad `json:"trace,omitempty"`
	// Memcslap, when set, runs libmemcached's memcslap instead of Load.
	Memcslap *MemcslapLoad `json:"memcslap,omitempty"`
	// Restart or RestartHit, when set, is the point's only phase and
	// starts and stops its servers itself (issue #28's warm restart).
	Restart    *RestartLoad    `json:"restart,omitempty"`
	RestartHit *RestartHitLoad `json:"restart_hit,omitempty"`
}

// Point is one x-axis value of a scenario: phases run in order against one
// server.
type Point struct {
	Label  string  `json:"label"`
	Group  string  `json:"group,omitempty"` // points of one group share a plot line set
	X      float64 `json:"x"`
	Phases []Phase `json:"phases"`
	// MemoryMB, when > 0, is the -m of every target at this point; it
	// needs ServerPerPoint (a server's -m is fixed when it starts).
	MemoryMB int `json:"memory_mb,omitempty"`
	// MaxReps, when > 0, runs the point in at most this many repetitions
	// (a long point, such as 10M items, in fewer than the profile's).
	MaxReps int `json:"max_reps,omitempty"`
}

// Column is one column of a scenario's table.
type Column struct {
	Header string
	Cell   func(r *Row) string
}

// Scenario is one benchmark, reproducing a published one.
type Scenario struct {
	Name       string // file name stem: results/<Name>.json
	Title      string // heading
	Reproduces string // which published benchmark, and how
	// Source names the post (or issue) the scenario reproduces: title,
	// where and when it appeared, and the address it can be found at.
	Source  string
	Notes   []string // assumptions and deviations
	XLabel  string   // meaning of Point.X
	LogX    bool     // plot X on a log scale
	Bars    bool     // categorical points: plot bars instead of lines
	Targets []Target // nil: the run's target matrix
	// MemoryMB and MaxConns, when > 0, are the -m and -c of every target
	// of this scenario, whatever the run's ServerLimits say (hit ratios
	// depend on -m; the hostile scenario is defined at -m 64 -c 4096).
	MemoryMB, MaxConns int
	// ServerPerPoint starts a fresh server for every point (and every
	// target at it), instead of one per target for all points: what one
	// point does to a server (hostile clients) must not carry over.
	ServerPerPoint bool
	// EqualRSS, when set, searches a target's -m before the repetitions
	// (see EqualRSS).
	EqualRSS *EqualRSS
	// Baseline names the target every row is compared with ("vs mc");
	// "" = memcached at the row's -t.
	Baseline   string
	Points     []Point
	Columns    []Column
	PlotPhases []string // phases whose throughput is plotted
	HitPhases  []string // phases whose hit ratio is plotted (one bar per phase)
	// MetricPlots are bar plots of other per-phase values (peak RSS,
	// probe latency, context switches per request).
	MetricPlots []MetricPlot
	// LatencyPhase and LatencyPoint select what the latency plot shows
	// (LatencyPoint "" = the last point).
	LatencyPhase, LatencyPoint string
	// XYPlots draw one value against another, one line per target.
	XYPlots []XYPlot
	// ReproduceArgs are the command-line flags, besides --scenario, that
	// reproduce the run (the trace scenario's --trace...).
	ReproduceArgs string
	// Tables, when set, replace the one table of Columns: one table per
	// point group, each with its own columns.
	Tables []Table
	// CustomPlots draw what the other plot kinds cannot (the restart
	// scenario's hit ratio over time).
	CustomPlots []CustomPlot
}

// Table is the table of one point group.
type Table struct {
	Group   string
	Heading string
	Columns []Column
}

// CustomPlot draws rows into the PNG file at path.
type CustomPlot struct {
	Name string // file name suffix: <scenario>-<Name>.png
	Draw func(path string, rows []*Row) error
}

// MetricPlot draws Value of Phase for every target (bars) at every point
// (one bar per point).
type MetricPlot struct {
	Name  string // file name suffix: <scenario>-<Name>.png
	Title string
	Axis  string
	Phase string
	Value func(*PhaseAgg) float64
}

// baseLoad is the loadgen configuration every scenario starts from.
func baseLoad(conns int) loadgen.Config {
	c := loadgen.DefaultConfig()
	c.Conns, c.Depth = conns, 1
	c.Verify = true
	c.IOTimeout = 30 * time.Second
	return c
}

// setPhase sets keys [0, n) once each, split over conns connections.
func setPhase(name string, report bool, conns, depth int, n uint64, prefix string, sizes []int) Phase {
	c := baseLoad(conns)
	c.Depth = depth
	c.Dist, c.Keys, c.Requests = loadgen.Sequential, n, int64(n)
	c.SetRatio, c.GetRatio = 1, 0
	c.KeyPrefix, c.ValueSizes = prefix, sizes
	return Phase{Name: name, Report: report, Flush: true, Load: c}
}

// getPhase reads keys [0, n) once each, split over conns connections.
func getPhase(name string, conns int, n uint64, prefix string, sizes []int) Phase {
	c := baseLoad(conns)
	c.Dist, c.Keys, c.Requests = loadgen.Sequential, n, int64(n)
	c.SetRatio, c.GetRatio = 0, 1
	c.KeyPrefix, c.ValueSizes = prefix, sizes
	return Phase{Name: name, Report: true, Load: c}
}

// timedMix runs a uniform set:get mix for d over keys [0, n).
func timedMix(conns int, n uint64, set, get int, size int, d time.Duration) Phase {
	c := baseLoad(conns)
	c.Keys, c.Requests, c.Duration = n, 0, d
	c.SetRatio, c.GetRatio = set, get
	c.ValueSizes = []int{size}
	return Phase{Name: "mixed", Report: true, Load: c}
}

// Scenarios returns the scenarios at profile p, in run order.
func Scenarios(p Profile) []Scenario {
	return []Scenario{threadSweep(p), sizeSweep(p), singleConn(p), manyThreads(p), fairness(p), hitRatio(p), memory(p),
		hostile(p), slowReader(p), hitRatioRSS(p), costs(p), traceScenario(p, DefaultTraceOptions(p)), restartScenario(p),
		memcslapScenario(p)}
}

// ScenarioNames lists the scenario names in run order.
func ScenarioNames() []string {
	var n []string
	for _, s := range Scenarios(Quick) {
		n = append(n, s.Name)
	}
	return n
}

func itoaLabel(prefix string, v int) string { return fmt.Sprintf("%s%d", prefix, v) }
