// Command ratios reads the output of BenchmarkTable (go test -bench, any
// -count) on standard input and prints bench/README.md's table: the median
// of each metric per benchmark and each row's ratio to its reference, in
// ns/op and in cpu-ns/op.
//
//	go test -run '^$' -bench Table -count 10 . | go run ./cmd/ratios
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// refs gives each row its references, by name; a row not listed is
// compared with the two failsafe-go pipelines.
var refs = map[string][]string{
	"breaker":                     {"gobreaker"},
	"ratelimit":                   {"rate/Allow"},
	"validate/Check":              {"jsonschema/decode+validate"},
	"preset/deadline/parallel":    {"preset/deadline/fresh", "failsafe/5policies/parallel"},
	"failsafe/5policies/parallel": {"failsafe/5policies"},
}

var defaultRefs = []string{"failsafe/5policies", "failsafe/4policies"}

// reference rows, printed without ratios of their own.
var plain = map[string]bool{"gobreaker": true, "rate/Allow": true, "jsonschema/decode+validate": true,
	"failsafe/4policies": true, "failsafe/5policies": true}

// line matches one result: name, -GOMAXPROCS suffix, iterations, metrics.
var line = regexp.MustCompile(`^BenchmarkTable/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}

// samples are the values read per benchmark name and unit, names in order
// of first appearance.
type samples struct {
	by    map[string]map[string][]float64 // name -> unit -> values
	order []string
}

func run(in io.Reader, out io.Writer) error {
	s, err := read(in)
	if err != nil {
		return err
	}
	n := len(s.by[s.order[0]]["ns/op"])
	fmt.Fprintf(out, "Medians of %d runs; ratios to the reference named, in ns/op and in cpu-ns/op.\n\n", n)
	fmt.Fprintln(out, "| benchmark | ns/op | cpu-ns/op | allocs/op | ratio (ns/op) | ratio (cpu-ns/op) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---|---|")
	for _, name := range s.order {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", name, s.cell(name, "ns/op", 1), s.cell(name, "cpu-ns/op", 1),
			s.cell(name, "allocs/op", 0), s.ratios(name, "ns/op"), s.ratios(name, "cpu-ns/op"))
	}
	return nil
}

// read parses BenchmarkTable's result lines; it fails on a value that is
// not a number or when there is none.
func read(in io.Reader) (*samples, error) {
	s := &samples{by: map[string]map[string][]float64{}}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[1]
		if s.by[name] == nil {
			s.by[name] = map[string][]float64{}
			s.order = append(s.order, name)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: %v", name, f[i], err)
			}
			s.by[name][f[i+1]] = append(s.by[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(s.order) == 0 {
		return nil, fmt.Errorf("no BenchmarkTable results on standard input")
	}
	return s, nil
}

// median is the median of name's values in unit; false when it has none.
func (s *samples) median(name, unit string) (float64, bool) {
	v := slices.Clone(s.by[name][unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// cell is the median with prec decimals, or "–" when there is none.
func (s *samples) cell(name, unit string, prec int) string {
	if v, ok := s.median(name, unit); ok {
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	return "–"
}

// ratios are name's ratios in unit to each of its references that has a
// median ("1.234x ref", comma-separated); "" for a reference row.
func (s *samples) ratios(name, unit string) string {
	if plain[name] {
		return ""
	}
	rs := refs[name]
	if rs == nil {
		rs = defaultRefs
	}
	var out []string
	for _, ref := range rs {
		a, ok1 := s.median(name, unit)
		b, ok2 := s.median(ref, unit)
		if ok1 && ok2 && b != 0 {
			out = append(out, fmt.Sprintf("%.3fx %s", a/b, ref))
		}
	}
	return strings.Join(out, ", ")
}
