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

func run(in io.Reader, out io.Writer) error {
	samples := map[string]map[string][]float64{} // name -> unit -> values
	var order []string
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[1]
		if samples[name] == nil {
			samples[name] = map[string][]float64{}
			order = append(order, name)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q: %v", name, f[i], err)
			}
			samples[name][f[i+1]] = append(samples[name][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(order) == 0 {
		return fmt.Errorf("no BenchmarkTable results on standard input")
	}
	med := func(name, unit string) (float64, bool) {
		v := slices.Clone(samples[name][unit])
		if len(v) == 0 {
			return 0, false
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2], true
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
	}
	cell := func(name, unit string, prec int) string {
		if v, ok := med(name, unit); ok {
			return strconv.FormatFloat(v, 'f', prec, 64)
		}
		return "–"
	}
	ratio := func(name, ref, unit string) string {
		a, ok1 := med(name, unit)
		b, ok2 := med(ref, unit)
		if !ok1 || !ok2 || b == 0 {
			return ""
		}
		return fmt.Sprintf("%.3fx %s", a/b, ref)
	}
	n := len(samples[order[0]]["ns/op"])
	fmt.Fprintf(out, "Medians of %d runs; ratios to the reference named, in ns/op and in cpu-ns/op.\n\n", n)
	fmt.Fprintln(out, "| benchmark | ns/op | cpu-ns/op | allocs/op | ratio (ns/op) | ratio (cpu-ns/op) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---|---|")
	for _, name := range order {
		var rn, rc []string
		if !plain[name] {
			rs := refs[name]
			if rs == nil {
				rs = defaultRefs
			}
			for _, ref := range rs {
				if r := ratio(name, ref, "ns/op"); r != "" {
					rn = append(rn, r)
				}
				if r := ratio(name, ref, "cpu-ns/op"); r != "" {
					rc = append(rc, r)
				}
			}
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", name, cell(name, "ns/op", 1), cell(name, "cpu-ns/op", 1),
			cell(name, "allocs/op", 0), strings.Join(rn, ", "), strings.Join(rc, ", "))
	}
	return nil
}
