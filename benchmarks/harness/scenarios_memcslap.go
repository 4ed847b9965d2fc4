package harness

import "fmt"

// memcslapName is scenario 14's name.
const memcslapName = "memcslap"

// memcslapScenario: scenario 14, the harness's thread sweep measured by an
// independent client.
func memcslapScenario(p Profile) Scenario {
	execute := pick(p, 500, 20_000, 40_000)
	threads := pick(p, []int{1, 4}, []int{1, 4, 16}, []int{1, 2, 4, 8, 16})
	sc := Scenario{
		Name: memcslapName,
		Title: fmt.Sprintf("14. An independent client: libmemcached's memcslap, %s requests per thread, %s threads",
			thousands(float64(execute)), intList(threads)),
		Source: "no outside post: a cross-check of the harness's own load generator (issue #25: a heavier client " +
			"takes the server's CPU on 2 shared cores and pulls every ratio towards 1).",
		Reproduces: fmt.Sprintf("`memcslap -s HOST:PORT -c T -t get -e %d` and `-t set` (Debian's "+
			"libmemcached-tools, libmemcached 1.1), a C client: T threads, each with one blocking connection; "+
			"the rate is memcslap's own timing of its timed part.", execute),
		Notes: []string{
			fmt.Sprintf("The get test first stores %s keys on one connection, then each thread gets %s of them: the "+
				"server's CPU per request counts those sets too (every request the server saw in the phase).",
				thousands(float64(execute)), thousands(float64(execute))),
			"memcslap picks its own keys and value sizes; client CPU is memcslap's user and system time over the phase.",
			"The harness installs libmemcached-tools when it is missing (as root; not with --no-install).",
		},
		XLabel:     "client threads (connections)",
		PlotPhases: []string{"get", "set"},
		Targets:    RobustTargets(),
		Columns: []Column{
			colPoint("threads"),
			colRate("get req/s", "get"), colRatio("get vs mc", "get"),
			colPerReq("get: server CPU µs/req", "get", func(a *PhaseAgg) Stat { return a.CPUUsPerReq }),
			colClientCPU("get"),
			colRate("set req/s", "set"), colRatio("set vs mc", "set"),
			colPerReq("set: server CPU µs/req", "set", func(a *PhaseAgg) Stat { return a.CPUUsPerReq }),
			colErrors("get", "set"),
		},
	}
	for _, t := range threads {
		sc.Points = append(sc.Points, Point{
			Label: itoaLabel("", t), X: float64(t),
			Phases: []Phase{
				{Name: "get", Report: true, Flush: true, Memcslap: &MemcslapLoad{Test: "get", Concurrency: t, Execute: execute}},
				{Name: "set", Report: true, Memcslap: &MemcslapLoad{Test: "set", Concurrency: t, Execute: execute}},
			},
		})
	}
	return sc
}

// usesMemcslap reports whether sc runs memcslap.
func usesMemcslap(sc *Scenario) bool {
	for _, pt := range sc.Points {
		for _, ph := range pt.Phases {
			if ph.Memcslap != nil {
				return true
			}
		}
	}
	return false
}
