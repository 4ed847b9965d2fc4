package harness

import (
	"fmt"

	"github.com/tandemcache/tandem/benchmarks/loadgen"
)

// costs: scenario 11, the per-request table of issue #15.
func costs(p Profile) Scenario {
	single := pick[int64](p, 1_000, 50_000, 200_000)
	singleTraced := pick[int64](p, 300, 5_000, 20_000)
	many := pick[int64](p, 5_000, 200_000, 1_000_000)
	manyTraced := pick[int64](p, 1_000, 20_000, 100_000)
	conns := pick(p, 50, 200, 200)
	const keys = 10_000
	run := func(name string, c int, n int64, set, get int, keySpace uint64, strace bool) Phase {
		l := baseLoad(c)
		l.Keys, l.Requests, l.Dist = keySpace, n, loadgen.Uniform
		l.SetRatio, l.GetRatio = set, get
		l.ValueSizes = []int{32}
		return Phase{Name: name, Report: true, Load: l, Strace: strace}
	}
	return Scenario{
		Name: "costs",
		Title: fmt.Sprintf("11. Per-request costs: context switches and syscalls, 1 and %s connections",
			thousands(float64(conns))),
		Source: "no outside post: issue #15 (the half-sync/half-async hand-off at memcached's speed), which asks " +
			"for syscalls and context switches per request, before and after each change.",
		Reproduces: fmt.Sprintf("what one request costs the server: `single`'s workload (one connection, blocking "+
			"set:get 1:1 on one key, 32-byte values) and a many-connections one (%d connections, get-heavy 1:10 over "+
			"%s preloaded keys). A `run` phase of a fixed request count (%s and %s) counts the server's CPU time and "+
			"context switches; a `strace` phase (%s and %s requests) counts its syscalls with `strace -c -f -p` "+
			"attached to every thread.", conns, thousands(keys), thousands(float64(single)), thousands(float64(many)),
			thousands(float64(singleTraced)), thousands(float64(manyTraced))),
		Notes: []string{
			"Context switches are voluntary_ctxt_switches and nonvoluntary_ctxt_switches summed over every thread's " +
				"/proc/<pid>/task/<tid>/status before and after the phase, over the phase's requests (threads that exit " +
				"during a phase are not counted; neither server retires threads under load).",
			"Syscalls come from a separate, shorter phase under strace, which slows the server many times over: " +
				"counts per request are what to read, not the phase's rate. Calls that depend on time rather than on " +
				"requests (the Go runtime's timers and sysmon, epoll_wait timeouts) are inflated by that slowness.",
			"read/req counts read, readv, recvfrom, recvmsg; write/req write, writev, sendto, sendmsg; epoll_wait/req " +
				"epoll_wait and epoll_pwait; futex/req futex (goroutine and thread hand-offs); other/req the rest.",
			"Placement changes context switches a lot (one core shared by client and server switches at every " +
				"request): compare rows of one run, and pin with --server-cpus/--client-cpus to study one placement.",
		},
		XLabel:  "workload",
		Bars:    true,
		Targets: FairnessTargets(),
		Columns: append([]Column{
			colPoint("workload"),
			colRate("req/s", "run"),
			colPerReq("server CPU µs/req", "run", func(a *PhaseAgg) Stat { return a.CPUUsPerReq }),
			colPerReq("vol cs/req", "run", func(a *PhaseAgg) Stat { return a.VolCSPerReq }),
			colPerReq("invol cs/req", "run", func(a *PhaseAgg) Stat { return a.InvolCSPerReq }),
		}, append(syscallCols("strace"), colErrors("run", "strace"))...),
		MetricPlots: []MetricPlot{
			{Name: "cs", Title: "costs: server context switches per request", Axis: "voluntary + nonvoluntary (median)",
				Phase: "run", Value: func(a *PhaseAgg) float64 { return a.VolCSPerReq.Median + a.InvolCSPerReq.Median }},
			{Name: "syscalls", Title: "costs: server syscalls per request (under strace)", Axis: "syscalls (median)",
				Phase: "strace", Value: func(a *PhaseAgg) float64 { return a.SyscallsPerReq["total"] }},
		},
		Points: []Point{
			{Label: "1 conn, one key", X: 1, Phases: []Phase{
				run("run", 1, single, 1, 1, 1, false),
				run("strace", 1, singleTraced, 1, 1, 1, true),
			}},
			{Label: fmt.Sprintf("%d conns, get-heavy", conns), X: 2, Phases: []Phase{
				setPhase("load", false, 16, 16, keys, "key:", []int{32}),
				run("run", conns, many, 1, 10, keys, false),
				run("strace", conns, manyTraced, 1, 10, keys, true),
			}},
		},
	}
}
