// Command overload is the overload simulation of docs/SEEDS.md run through
// Portico, a metastable failure in the making (Bronson et al., "Metastable
// Failures in Distributed Systems", HotOS 2021): 80 new requests per second
// against a FIFO server of capacity 100/s that does not know who gave up
// (modeltest.CapacityServer), clients that wait 2.1 s, the server down from
// 30 to 40 s, 340 s in all, in virtual time. It prints the table of
// docs/SEEDS.md (useful answers per second before the outage, 0-30 s, 30-90 s
// and 4-5 min after it; calls left queued), with how long goodput took to
// come back, attempts per request and calls served for nobody, for the four
// policies there, built with package retry, and for Portico's preset
// (package stack with its defaults); with -png FILE it draws each policy's
// useful answers and attempts per second.
//
// # Virtual time in a command
//
// testing/synctest, which runs the 340 s in a fraction of a second and gives
// the same result every time, needs a *testing.T. The command gets one from
// testing.Main, exported for programs that simulate "go test": it runs the
// lab as a test named Lab, each policy in a bubble of its own. testing then
// owns the process's exit code and reports on os.Stdout ("PASS", or the
// failure); the command points os.Stdout at os.Stderr first, so that its
// standard output is the table alone. The lab's test (lab_test.go) calls the
// same function from go test.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"testing"
	"time"
)

func main() {
	testing.Init()
	png := flag.String("png", "", "write the policies' useful answers and attempts per second to this PNG file")
	patience := flag.Duration("patience", DefaultPatience, "how long a client waits for a call (2.001s: the seed's code with exact ages)")
	flag.Parse()
	out := os.Stdout
	os.Stdout = os.Stderr
	testing.Main(regexp.MatchString, []testing.InternalTest{{Name: "Lab", F: func(t *testing.T) {
		if _, err := run(t, out, policies, *patience, *png); err != nil {
			t.Fatal(err)
		}
	}}}, nil, nil)
}

// run simulates each of ps, prints the table to out and, when png is not
// empty, writes the picture there. It returns the results in ps's order.
func run(t *testing.T, out io.Writer, ps []policy, patience time.Duration, png string) ([]*result, error) {
	if patience <= 0 {
		return nil, fmt.Errorf("-patience must be positive, not %v", patience)
	}
	results := make([]*result, len(ps))
	for i, p := range ps {
		results[i] = simulate(t, p, patience)
	}
	printTable(out, patience, ps, results)
	if png == "" {
		return results, nil
	}
	f, err := os.Create(png)
	if err != nil {
		return nil, err
	}
	if err := picture(ps, results).WritePNG(f, 9, 1.9); err != nil {
		f.Close()
		return nil, err
	}
	return results, f.Close()
}
