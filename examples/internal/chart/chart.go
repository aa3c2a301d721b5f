// Package chart draws the examples' time series as a PNG with
// gonum.org/v1/plot: one panel per run, stacked, sharing their axes, each with
// its rates per second, a shaded interval (an outage) and a reference line (a
// capacity). It is the examples module's only user of gonum/plot, which the
// core module never imports.
package chart

import (
	"cmp"
	"errors"
	"image/color"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line: a value per Chart.Step from time 0.
type Series struct {
	Name   string
	Values []float64
}

// Panel is one run's plot, or one of its plots. The first panel with a given
// list of series names carries their legend.
type Panel struct {
	Title  string
	Series []Series
}

// Chart is the whole picture: its panels, stacked in order, and what every
// panel shares.
type Chart struct {
	Panels []Panel
	// YLabel names the panels' unit; the x axis is seconds.
	YLabel string
	// Step is the time each value covers, in seconds; zero means 1, and
	// negative is an error.
	Step float64
	// XMax is the last second drawn; zero draws the longest series whole.
	XMax float64
	// YMax is the top of every panel's y axis; zero fits the largest value.
	YMax float64
	// ShadeFrom and ShadeTo, in seconds, mark an interval on every panel (an
	// outage), named ShadeName in the legend; ShadeTo zero means none.
	ShadeFrom, ShadeTo float64
	ShadeName          string
	// Line draws a dashed horizontal line at this height on every panel,
	// named LineName in the legend (a capacity); zero means none.
	Line     float64
	LineName string
}

// The series' colours, in order: blue, orange, green, purple (the
// Okabe-Ito palette, readable by colour-blind readers).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
}

// WritePNG draws c as a PNG of the given width, in inches, with each panel
// panelHeight inches tall, at 96 dots per inch. It fails when c has no panel,
// a panel more series than there are colours (four), or a negative Step.
func (c Chart) WritePNG(w io.Writer, width, panelHeight float64) error {
	switch {
	case len(c.Panels) == 0:
		return errors.New("chart: no panel")
	case c.Step < 0:
		return errors.New("chart: negative Step")
	}
	c.Step = cmp.Or(c.Step, 1)
	ymax, xmax := c.YMax, 0.0
	for _, p := range c.Panels {
		if len(p.Series) > len(palette) {
			return errors.New("chart: more than four series in a panel")
		}
		for _, s := range p.Series {
			xmax = max(xmax, float64(len(s.Values))*c.Step)
			if c.YMax == 0 {
				for _, v := range s.Values {
					ymax = max(ymax, v)
				}
			}
		}
	}
	if c.XMax > 0 {
		xmax = c.XMax
	}
	ymax = max(ymax, c.Line*1.1, 1)
	plots := make([][]*plot.Plot, len(c.Panels))
	legends := map[string]bool{}
	for i, p := range c.Panels {
		names := seriesNames(p)
		pl, err := c.panel(p, xmax, ymax, !legends[names], i == len(c.Panels)-1)
		legends[names] = true
		if err != nil {
			return err
		}
		plots[i] = []*plot.Plot{pl}
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(width)*vg.Inch, vg.Length(panelHeight*float64(len(c.Panels)))*vg.Inch), vgimg.UseDPI(96))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(c.Panels), Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// seriesNames is p's series' names, one per line.
func seriesNames(p Panel) string {
	var b strings.Builder
	for _, s := range p.Series {
		b.WriteString(s.Name)
		b.WriteByte('\n')
	}
	return b.String()
}

// panel builds one panel; the first with its series' names carries the legend, the last the x
// axis's label. The series are drawn last first, so that the first is on top.
func (c Chart) panel(p Panel, xmax, ymax float64, legend, last bool) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.Title.TextStyle.Font.Size = vg.Points(11)
	if last {
		pl.X.Label.Text = "time (s)"
	}
	pl.Y.Label.Text = c.YLabel
	pl.X.Min, pl.X.Max = 0, xmax
	pl.Y.Min, pl.Y.Max = 0, ymax
	pl.Add(plotter.NewGrid())
	if c.ShadeTo > 0 {
		shade, err := plotter.NewPolygon(plotter.XYs{{X: c.ShadeFrom, Y: 0}, {X: c.ShadeTo, Y: 0}, {X: c.ShadeTo, Y: ymax}, {X: c.ShadeFrom, Y: ymax}})
		if err != nil {
			return nil, err
		}
		shade.Color = color.Gray{Y: 215}
		shade.LineStyle.Width = 0
		pl.Add(shade)
		if legend {
			pl.Legend.Add(c.ShadeName, shade)
		}
	}
	if c.Line > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: c.Line}, {X: xmax, Y: c.Line}})
		if err != nil {
			return nil, err
		}
		l.Color = color.Gray{Y: 60}
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		pl.Add(l)
		if legend {
			pl.Legend.Add(c.LineName, l)
		}
	}
	lines := make([]*plotter.Line, len(p.Series))
	for i := len(p.Series) - 1; i >= 0; i-- {
		s := p.Series[i]
		xys := make(plotter.XYs, 0, len(s.Values))
		for j, v := range s.Values {
			x := float64(j) * c.Step
			if x >= xmax {
				break
			}
			// Each value is drawn at the middle of its step.
			xys = append(xys, plotter.XY{X: x + c.Step/2, Y: v})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = palette[i]
		l.Width = vg.Points(1.5)
		pl.Add(l)
		lines[i] = l
	}
	if legend {
		for i, l := range lines {
			pl.Legend.Add(p.Series[i].Name, l)
		}
	}
	pl.Legend.Top = true
	pl.Legend.Left = false
	return pl, nil
}
