package tokencount

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

// prompt is one prompt of the corpus, its category and its true input
// tokens.
type prompt struct {
	cat, name string
	text      string
	truth     int
}

// request is text as a one-message request to model m.
func request(m, text string) *portico.Request {
	return &portico.Request{Model: m, Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

// corpus reads testdata/corpus (<category>-<n>.txt), counting each
// prompt's tokens with o200k_base, in the files' order.
func corpus(t *testing.T) []prompt {
	t.Helper()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/corpus/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus: %v, %d files", err, len(files))
	}
	sort.Strings(files)
	var out []prompt
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		cat, _, _ := strings.Cut(name, "-")
		out = append(out, prompt{cat: cat, name: name, text: string(b), truth: e.EstimateInputTokens(request("", string(b)))})
	}
	return out
}

// relErr is est's error relative to truth.
func relErr(est, truth int) float64 { return float64(est-truth) / float64(truth) }

// leaveOneOut returns the calibrated byte estimate of ps[i] on route
// key, after the route reported the true tokens of every other prompt
// of ps, in order, passes times over.
func leaveOneOut(t *testing.T, ps []prompt, i, passes int, key string) int {
	t.Helper()
	c, err := portico.NewCalibrated(portico.CharEstimator{}, portico.Calibration{})
	if err != nil {
		t.Fatal(err)
	}
	for range passes {
		for j, p := range ps {
			if j != i {
				req := request(key, p.text)
				c.ObserveInputTokens(req, c.EstimateInputTokens(req), p.truth)
			}
		}
	}
	return c.EstimateInputTokens(request(key, ps[i].text))
}

// stats is the mean absolute and the worst (most negative: the largest
// under-reservation) of errs, in percent.
func stats(errs []float64) (mean, worst float64) {
	worst = math.Inf(1)
	for _, e := range errs {
		mean += math.Abs(e)
		worst = min(worst, e)
	}
	return 100 * mean / float64(len(errs)), 100 * worst
}

// TestReservationError measures the input estimate's error on the
// corpus (code, JSON, prose, CJK, mixed; true counts by o200k_base with
// the chat framing): the byte rule (portico.CharEstimator) before, and
// after calibration (portico.Calibrated) from the true counts the route
// reported, each prompt held out of its own calibration: a route per
// category (the other 3 prompts, 6 passes: 18 samples) and one route
// for all (the other 19). The tokenizer Estimator's own error on an
// OpenAI route is 0 by construction. Run with -v to print the table.
func TestReservationError(t *testing.T) {
	ps := corpus(t)
	byCat := map[string][]prompt{}
	var cats []string
	for _, p := range ps {
		if byCat[p.cat] == nil {
			cats = append(cats, p.cat)
		}
		byCat[p.cat] = append(byCat[p.cat], p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %7s %6s | %-16s | %-16s | %s\n", "corpus", "prompts", "tokens", "bytes/4", "calibrated/route", "one route, all")
	fmt.Fprintf(&b, "%-7s %7s %6s | %7s %8s | %7s %8s | %7s %8s\n", "", "", "", "mean|e|", "worst", "mean|e|", "worst", "mean|e|", "worst")
	var all [3][]float64
	row := func(name string, n, tokens int, errs [3][]float64) {
		fmt.Fprintf(&b, "%-7s %7d %6d", name, n, tokens)
		for _, e := range errs {
			m, w := stats(e)
			fmt.Fprintf(&b, " | %6.1f%% %+7.1f%%", m, w)
		}
		b.WriteString("\n")
	}
	for _, cat := range cats {
		group := byCat[cat]
		var errs [3][]float64
		tokens := 0
		for i, p := range group {
			tokens += p.truth
			errs[0] = append(errs[0], relErr(portico.CharEstimator{}.EstimateInputTokens(request("", p.text)), p.truth))
			errs[1] = append(errs[1], relErr(leaveOneOut(t, group, i, 6, cat), p.truth))
			k := indexOf(ps, p.name)
			errs[2] = append(errs[2], relErr(leaveOneOut(t, ps, k, 1, "all"), p.truth))
		}
		for j := range errs {
			all[j] = append(all[j], errs[j]...)
		}
		row(cat, len(group), tokens, errs)
	}
	total := 0
	for _, p := range ps {
		total += p.truth
	}
	row("all", len(ps), total, all)
	got := b.String()
	t.Logf("input estimate error, (estimate - true) / true:\n%s", got)
	if got != wantFigures {
		t.Errorf("figures changed:\n%s\nwant:\n%s", got, wantFigures)
	}
}

func indexOf(ps []prompt, name string) int {
	for i, p := range ps {
		if p.name == name {
			return i
		}
	}
	return -1
}

const wantFigures = "" +
	"corpus  prompts tokens | bytes/4          | calibrated/route | one route, all\n" +
	"                       | mean|e|    worst | mean|e|    worst | mean|e|    worst\n" +
	"cjk           4    600 |    9.1%    -9.0% |    9.7%    -7.6% |    6.8%    -2.1%\n" +
	"code          4    976 |   12.1%   -22.7% |   11.1%   -15.5% |    9.8%   -17.8%\n" +
	"json          4    901 |   22.2%   -38.4% |   22.7%   -24.9% |   19.2%   -34.9%\n" +
	"mixed         4    720 |   23.6%   -29.0% |    5.9%    -8.4% |   18.1%   -23.9%\n" +
	"prose         4    526 |   23.1%   +20.3% |    3.6%    -2.4% |   36.0%   +32.5%\n" +
	"all          20   3723 |   18.0%   -38.4% |   10.6%   -24.9% |   18.0%   -34.9%\n"
