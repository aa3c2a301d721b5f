package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// seed000 is seed 000's printed table: before, 0-30 s, 30-90 s, 4-5 min
// after, left in queue.
var seed000 = map[string]row{
	"no retry":               {before: 80, after30: 0, after90: 80.3, after5m: 80, left: 0},
	"retry up to 3 times":    {before: 80, after30: 0, after90: 0, after5m: 0, left: 68192},
	"retry, 10% budget":      {before: 80, after30: 0, after90: 38.4, after5m: 80, left: 0},
	"retry, expired dropped": {before: 80, after30: 89.5, after90: 80, after5m: 80, left: 0},
}

// want is the lab's whole table at the default patience. Every run is
// deterministic (see DefaultPatience), so the figures are checked to the
// printed precision.
// The unbudgeted row's queue is sampled with the call in service, as the
// seed's fluid queue counts it: one more than the seed's 68192.
var want = map[string]row{
	"no retry":                                  {80, 0, 80.3, 80, 0, 32, 1, 3180},
	"retry up to 3 times":                       {80, 0, 0, 0, 68193, -1, 3.735, 30830},
	"retry, 10% budget":                         {80, 0, 38.4, 80, 0, 64, 1.024, 6347},
	"retry, expired dropped":                    {80, 89.5, 80, 80, 0, 0, 1.066, 0},
	"Portico preset, deadline":                  {80, 0, 80.3, 80, 0, 32, 1, 3180},
	"Portico preset, deadline, expired dropped": {80, 85.3, 80, 80, 0, 0, 1, 0},
	"Portico preset, attempt timeout":           {80, 16.8, 80, 80, 0, 24, 0.916, 399},
}

// TestLab runs the lab and checks its table: the seed's four rows within
// 10% (or 1/s) of the seed's printed figures, every row to the printed
// precision, and what the preset's rows claim. With the patience as the
// user's deadline the preset never retries a call its deadline ended, so
// at the FIFO server it is exactly "no retry", the best row there; at a
// server that drops expired calls it is back at 95% of the arrival rate in
// the first second after the outage, like the seed's best row (retry,
// expired dropped), with no call served for nobody and one attempt per
// request. With the patience as its attempt timeout, its breaker opens
// during the outage and sends nothing for 30 s (breaker.Config.OpenFor's
// default), so goodput is back 24 s after the outage.
func TestLab(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 340 s of traffic for each of seven policies")
	}
	ps := policies
	if raceEnabled {
		// Its 100,000 attempts take 20 s under -race; the budgeted rows
		// give the race coverage.
		ps = slices.DeleteFunc(slices.Clone(ps), func(p policy) bool { return p.name == "retry up to 3 times" })
	}
	var out bytes.Buffer
	file := filepath.Join(t.TempDir(), "lab.png")
	results, err := run(t, &out, ps, DefaultPatience, file)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(ps) || len(want) != len(policies) {
		t.Fatalf("run gave %d results for %d policies, want has %d rows for %d", len(results), len(ps), len(want), len(policies))
	}
	byName := map[string]*result{}
	for i, r := range results {
		name := ps[i].name
		byName[name] = r
		got := r.row()
		if s, ok := seed000[name]; ok {
			checkSeed(t, name, got, s)
		}
		if w, ok := want[name]; !ok || !near(got, w) {
			t.Errorf("%s: row = %+v, want %+v", name, got, w)
		}
		if r.requests != steps*perStep {
			t.Errorf("%s: %d requests ended, want %d", name, r.requests, steps*perStep)
		}
		st := r.stats
		if st.Arrived != st.Queued+st.Busy+st.Useful+st.Wasted+st.Dropped+st.Rejected {
			t.Errorf("%s: server stats %+v do not account for every call", name, st)
		}
		// Every request has ended; calls are left at the server only by
		// the unbudgeted retries, abandoned there.
		if st.Queued+st.Busy != 0 && name != "retry up to 3 times" {
			t.Errorf("%s: %d calls left at the server after every request ended, want none", name, st.Queued+st.Busy)
		}
	}
	// The preset's failures are classified: deadlines with the user's
	// deadline, breaker rejections and exhausted attempts or budget (both
	// Ambiguous: the attempts timed out) with the attempt timeout.
	for name, classes := range map[string][]portico.Class{
		"Portico preset, deadline":                  {portico.Deadline},
		"Portico preset, deadline, expired dropped": {portico.Deadline},
		"Portico preset, attempt timeout":           {portico.Ambiguous, portico.Rejected},
	} {
		for c, n := range byName[name].failed {
			if !slices.Contains(classes, c) {
				t.Errorf("%s: %d requests failed %v, want only %v", name, n, c, classes)
			}
		}
	}
	checkPNG(t, file, len(ps))
	for _, line := range []string{"| no retry | 80.0 | 0.0 | 80.3 | 80.0 | 0 | 32 s | 1.000 | 3180 |",
		"| Portico preset, attempt timeout | 80.0 | 16.8 | 80.0 | 80.0 | 0 | 24 s | 0.916 | 399 |"} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}

// checkSeed checks a seed row against the seed's figure: within 10% or 1/s,
// whichever is larger, and the queue within 10% (none when the seed has none).
func checkSeed(t *testing.T, name string, got, seed row) {
	t.Helper()
	for _, c := range []struct {
		col       string
		got, want float64
	}{{"before", got.before, seed.before}, {"0-30 s after", got.after30, seed.after30},
		{"30-90 s after", got.after90, seed.after90}, {"4-5 min after", got.after5m, seed.after5m}} {
		if math.Abs(c.got-c.want) > max(1, 0.1*c.want) {
			t.Errorf("%s: %s = %.1f/s, seed %.1f", name, c.col, c.got, c.want)
		}
	}
	if d := math.Abs(float64(got.left - seed.left)); d > 0.1*float64(seed.left) {
		t.Errorf("%s: left in queue = %d, seed %d", name, got.left, seed.left)
	}
}

// near reports whether a and b agree to the table's printed precision.
func near(a, b row) bool {
	f := func(x, y float64) bool { return math.Abs(x-y) < 0.05 }
	return f(a.before, b.before) && f(a.after30, b.after30) && f(a.after90, b.after90) && f(a.after5m, b.after5m) &&
		a.left == b.left && a.recovery == b.recovery && math.Abs(a.attempts-b.attempts) < 0.0005 && a.wasted == b.wasted
}

// checkPNG checks that file is the lab's picture of n policies: a PNG 9 in
// wide and 1.9 in per policy at 96 dpi.
func checkPNG(t *testing.T, file string, n int) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("png.Decode(%s) = %v", file, err)
	}
	if b, h := img.Bounds(), int(math.Round(1.9*96*float64(n))); b.Dx() != 864 || b.Dy() != h {
		t.Errorf("picture is %dx%d px, want 864x%d", b.Dx(), b.Dy(), h)
	}
}
