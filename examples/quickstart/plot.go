package main

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/examples/internal/chart"
	"github.com/portico-llm/portico/examples/internal/dial"
)

// plotStep is the width of -plot's bins.
const plotStep = 100 * time.Millisecond

// writePlot writes each run as two panels of rates per second over time to
// file as a PNG, titled by titles: goodput (answers reaching their callers)
// and the answers of each route; then attempts (reaching the adapters, all
// routes) and the failed requests by class.
func writePlot(file string, titles []string, runs []*results) error {
	c := chart.Chart{YLabel: "per second", Step: plotStep.Seconds()}
	top := topClasses(runs)
	for i, r := range runs {
		answers := []chart.Series{{Name: "goodput (answers/s)", Values: rates(r.answerAt, r.start)}}
		var attempts []time.Time
		for j := range r.routes {
			attempts = append(attempts, r.routes[j].attemptAt...)
			answers = append(answers, chart.Series{Name: "answered by " + dial.Providers[j].Name, Values: rates(r.routes[j].answerAt, r.start)})
		}
		c.Panels = append(c.Panels,
			chart.Panel{Title: titles[i] + ": answers, by route", Series: answers},
			chart.Panel{Title: titles[i] + ": attempts and failed requests, by class",
				Series: append([]chart.Series{{Name: "attempts/s", Values: rates(attempts, r.start)}}, failures(r, top)...)})
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := c.WritePNG(f, 9, 2.2); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// topClasses is the two classes of failure most frequent over runs, which
// writePlot draws apart (a panel keeps to the chart's four colours, and a
// class keeps its colour from run to run).
func topClasses(runs []*results) []portico.Class {
	n := map[portico.Class]int{}
	for _, r := range runs {
		for c, at := range r.failAt {
			n[c] += len(at)
		}
	}
	classes := make([]portico.Class, 0, len(n))
	for c := range n {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b portico.Class) int { return cmp.Or(cmp.Compare(n[b], n[a]), cmp.Compare(a, b)) })
	return classes[:min(2, len(classes))]
}

// failures is r's failed requests per second: a series per class of top,
// then one for every other class.
func failures(r *results, top []portico.Class) []chart.Series {
	var out []chart.Series
	var rest []time.Time
	for c, at := range r.failAt {
		if !slices.Contains(top, c) {
			rest = append(rest, at...)
		}
	}
	for _, c := range top {
		out = append(out, chart.Series{Name: fmt.Sprintf("failed %v/s", c), Values: rates(r.failAt[c], r.start)})
	}
	return append(out, chart.Series{Name: "failed, other classes/s", Values: rates(rest, r.start)})
}

// rates bins times by plotStep from start and returns each bin's count per
// second.
func rates(times []time.Time, start time.Time) []float64 {
	var out []float64
	for _, t := range times {
		i := int(t.Sub(start) / plotStep)
		if i < 0 {
			continue
		}
		for len(out) <= i {
			out = append(out, 0)
		}
		out[i] += float64(time.Second / plotStep)
	}
	return out
}
