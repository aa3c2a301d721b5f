package main

import (
	"fmt"
	"io"
	"time"

	"github.com/portico-llm/portico/examples/internal/chart"
)

// row is a result's line of the table: seed 000's five columns, then how
// long goodput took to come back (result.recovery), attempts per request and
// the calls the server served for nobody.
type row struct {
	before, after30, after90, after5m float64
	left, recovery                    int
	attempts                          float64
	wasted                            int
}

// row reads the table's line off r. The windows are seconds of the outage's
// aftermath: 0-30 s after is seconds 40-70 of the run, 30-90 s after 70-130,
// 4-5 min after 280-340.
func (r *result) row() row {
	end := outageEnd / 10
	return row{
		before:   r.window(0, outageStart/10),
		after30:  r.window(end, end+30),
		after90:  r.window(end+30, end+90),
		after5m:  r.window(end+240, end+300),
		left:     r.left,
		recovery: r.recovery(),
		attempts: float64(r.stats.Arrived) / float64(r.requests),
		wasted:   r.stats.Wasted,
	}
}

// printTable writes the table, in Markdown.
func printTable(w io.Writer, patience time.Duration, ps []policy, results []*result) {
	fmt.Fprintf(w, "%d new requests/s, capacity %d/s, patience %v, outage %d-%d s, %d s in all; useful answers per second:\n\n",
		arrivalRate, capacity, patience, outageStart/10, outageEnd/10, seconds)
	fmt.Fprintln(w, "| policy | before | 0–30 s after | 30–90 s after | 4–5 min after | left in queue | back to 95% after | attempts/request | served for nobody |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for i, r := range results {
		x := r.row()
		back := "never"
		if x.recovery >= 0 {
			back = fmt.Sprintf("%d s", x.recovery)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %d | %s | %.3f | %d |\n",
			ps[i].name, x.before, x.after30, x.after90, x.after5m, x.left, back, x.attempts, x.wasted)
	}
}

// picture is the lab's chart: a panel per policy with its useful answers and
// attempts per second, the outage shaded and the capacity drawn.
func picture(ps []policy, results []*result) chart.Chart {
	c := chart.Chart{
		YLabel:    "per second",
		YMax:      350,
		XMax:      seconds,
		ShadeFrom: outageStart / 10, ShadeTo: outageEnd / 10, ShadeName: "outage",
		Line: capacity, LineName: "capacity",
	}
	for i, r := range results {
		useful, attempts := make([]float64, seconds), make([]float64, seconds)
		for s := range seconds {
			useful[s], attempts[s] = float64(r.useful[s]), float64(r.attempts[s])
		}
		c.Panels = append(c.Panels, chart.Panel{Title: ps[i].name, Series: []chart.Series{
			{Name: "useful answers/s", Values: useful},
			{Name: "attempts/s (calls reaching the server)", Values: attempts},
		}})
	}
	return c
}
