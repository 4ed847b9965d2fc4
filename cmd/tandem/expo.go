package main

import (
	"slices"
	"strconv"
	"strings"
)

// The metrics endpoint renders tandem's own families (read at scrape time
// from the stats snapshot) in Prometheus's text exposition format, version
// 0.0.4: a "# HELP" and "# TYPE" line per family, then its samples, each
// family's samples together and its labels sorted by name, as the
// Prometheus client library wrote them. The Go runtime, process and latency
// histogram families come from github.com/VictoriaMetrics/metrics.

// valueType is a family's metric type.
type valueType uint8

const (
	counterValue valueType = iota
	gaugeValue
)

func (v valueType) String() string {
	if v == counterValue {
		return "counter"
	}
	return "gauge"
}

// family is one metric family: its name, help text and label names.
type family struct {
	name, help string
	labels     []string
	order      []int // indexes into labels, sorted by label name
}

func newFamily(name, help string, labels ...string) *family {
	f := &family{name: name, help: help, labels: labels, order: make([]int, len(labels))}
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return f
}

// expo collects one scrape's samples, grouped by family in the order each
// family first appears.
type expo struct {
	groups []group
	index  map[*family]int // into groups
}

// group is one family's samples: its type (from the first sample) and its
// rendered sample lines.
type group struct {
	f    *family
	vt   valueType
	rows []byte
}

// add records one sample of f; labelValues go with f.labels, in order.
func (e *expo) add(f *family, vt valueType, v float64, labelValues ...string) {
	if e.index == nil {
		e.index = map[*family]int{}
	}
	i, ok := e.index[f]
	if !ok {
		i = len(e.groups)
		e.index[f] = i
		e.groups = append(e.groups, group{f: f, vt: vt})
	}
	b := append(e.groups[i].rows, f.name...)
	if len(f.labels) > 0 {
		b = append(b, '{')
		for n, j := range f.order {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, f.labels[j]...)
			b = append(b, `="`...)
			b = append(b, labelEscaper.Replace(labelValues[j])...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = strconv.AppendFloat(b, v, 'g', -1, 64) // +Inf, -Inf and NaN as the format spells them
	e.groups[i].rows = append(b, '\n')
}

// appendTo appends every family collected to b.
func (e *expo) appendTo(b []byte) []byte {
	for _, g := range e.groups {
		b = append(b, "# HELP "...)
		b = append(b, g.f.name...)
		b = append(b, ' ')
		b = append(b, helpEscaper.Replace(g.f.help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, g.f.name...)
		b = append(b, ' ')
		b = append(b, g.vt.String()...)
		b = append(b, '\n')
		b = append(b, g.rows...)
	}
	return b
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)
