package main

import (
	"os"
	"time"

	"github.com/portico-llm/portico/examples/internal/chart"
)

// plotStep is the width of -plot's bins.
const plotStep = 100 * time.Millisecond

// writePlot writes runs' goodput (answers reaching their callers) and
// attempts (reaching the adapters, all routes) per second over time to file
// as a PNG, a panel per run, titled by titles.
func writePlot(file string, titles []string, runs []*results) error {
	c := chart.Chart{YLabel: "per second", Step: plotStep.Seconds()}
	for i, r := range runs {
		var attempts []time.Time
		for j := range r.routes {
			attempts = append(attempts, r.routes[j].attemptAt...)
		}
		c.Panels = append(c.Panels, chart.Panel{Title: titles[i], Series: []chart.Series{
			{Name: "goodput (answers/s)", Values: rates(r.answerAt, r.start)},
			{Name: "attempts/s", Values: rates(attempts, r.start)},
		}})
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
