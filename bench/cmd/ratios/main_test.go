package main

import (
	"strings"
	"testing"
)

// TestRun pins the table: medians over runs, each row's ratios to its
// references (the default pair, a named one, none for a reference row),
// "–" for a unit a row lacks.
func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkTable/failsafe/5policies-2   	100	1000 ns/op	900 cpu-ns/op	10 allocs/op
BenchmarkTable/failsafe/4policies-2   	100	800 ns/op	700 cpu-ns/op	8 allocs/op
BenchmarkTable/breaker-2 	100	50 ns/op	0 allocs/op
BenchmarkTable/gobreaker-2 	100	60 ns/op	0 allocs/op
BenchmarkTable/failsafe/5policies-2   	100	1100 ns/op	950 cpu-ns/op	10 allocs/op
BenchmarkTable/x-2   	100	500 ns/op	400 cpu-ns/op	5 allocs/op
`
	want := `Medians of 2 runs; ratios to the reference named, in ns/op and in cpu-ns/op.

| benchmark | ns/op | cpu-ns/op | allocs/op | ratio (ns/op) | ratio (cpu-ns/op) |
|---|---:|---:|---:|---|---|
| failsafe/5policies | 1050.0 | 925.0 | 10 |  |  |
| failsafe/4policies | 800.0 | 700.0 | 8 |  |  |
| breaker | 50.0 | – | 0 | 0.833x gobreaker |  |
| gobreaker | 60.0 | – | 0 |  |  |
| x | 500.0 | 400.0 | 5 | 0.476x failsafe/5policies, 0.625x failsafe/4policies | 0.432x failsafe/5policies, 0.571x failsafe/4policies |
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestRunErrors: no result line, and a value that is not a number.
func TestRunErrors(t *testing.T) {
	for in, want := range map[string]string{
		"PASS\n":                           "no BenchmarkTable results on standard input",
		"BenchmarkTable/x-2 1 abc ns/op\n": `x: "abc": strconv.ParseFloat: parsing "abc": invalid syntax`,
	} {
		err := run(strings.NewReader(in), new(strings.Builder))
		if err == nil || err.Error() != want {
			t.Errorf("run(%q) = %v, want %s", in, err, want)
		}
	}
}
