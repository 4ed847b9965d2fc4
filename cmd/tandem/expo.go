package main

import (
	"io"
	"math"
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
	families []*family
	types    []valueType
	rows     [][]byte // the rendered sample lines of families[i]
	index    map[*family]int
}

// add records one sample of f; labelValues go with f.labels, in order.
func (e *expo) add(f *family, vt valueType, v float64, labelValues ...string) {
	if e.index == nil {
		e.index = map[*family]int{}
	}
	i, ok := e.index[f]
	if !ok {
		i = len(e.families)
		e.index[f] = i
		e.families = append(e.families, f)
		e.types = append(e.types, vt)
		e.rows = append(e.rows, nil)
	}
	b := append(e.rows[i], f.name...)
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
	b = appendFloat(b, v)
	e.rows[i] = append(b, '\n')
}

// writeTo writes every family collected.
func (e *expo) writeTo(w io.Writer) error {
	var b []byte
	for i, f := range e.families {
		b = append(b[:0], "# HELP "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, helpEscaper.Replace(f.help)...)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.name...)
		b = append(b, ' ')
		b = append(b, e.types[i].String()...)
		b = append(b, '\n')
		b = append(b, e.rows[i]...)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// appendFloat formats v as the exposition format reads it.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}
