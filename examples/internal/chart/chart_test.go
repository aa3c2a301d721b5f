package chart

import (
	"bytes"
	"image/png"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWritePNG(t *testing.T) {
	ramp := make([]float64, 60)
	for i := range ramp {
		ramp[i] = float64(i)
	}
	c := Chart{YLabel: "per second", ShadeFrom: 10, ShadeTo: 20, ShadeName: "outage", Line: 50, LineName: "capacity",
		Panels: []Panel{{Title: "a", Series: []Series{{Name: "x", Values: ramp}}}, {Title: "b"}}}
	var buf bytes.Buffer
	if err := c.WritePNG(&buf, 5, 2); err != nil {
		t.Fatalf("WritePNG = %v", err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("png.Decode = %v", err)
	}
	if b := img.Bounds(); b.Dx() != 480 || b.Dy() != 384 {
		t.Errorf("image is %dx%d, want 480x384 (5 in by 2 x 2 in at 96 dpi)", b.Dx(), b.Dy())
	}
}

func TestWritePNGRefuses(t *testing.T) {
	five := make([]Series, 5)
	for _, c := range []Chart{{}, {Panels: []Panel{{Series: five}}}, {Step: -1, Panels: []Panel{{}}}} {
		if err := c.WritePNG(&bytes.Buffer{}, 5, 2); err == nil {
			t.Errorf("WritePNG(%+v) = nil, want an error", c)
		}
	}
}
