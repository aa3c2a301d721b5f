package modeltest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

func request(text string) *portico.Request {
	return &portico.Request{Model: "small", Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

// A Fake plays its script in order, repeating the last Outcome, and records
// every call.
func ExampleFake() {
	fake := modeltest.NewFake(
		modeltest.Fail(modeltest.RateLimitError(2*time.Second)),
		modeltest.Fail(modeltest.StatusError(503)),
		modeltest.Answer("done"),
	)
	for range 4 {
		resp, err := fake.Generate(context.Background(), request("hi"))
		if err != nil {
			fmt.Println(portico.ClassOf(err), portico.RetryAfterOf(err), errors.Is(err, modeltest.ErrInjected))
			continue
		}
		fmt.Println(resp.Text, resp.Model)
	}
	fmt.Println(fake.Count(), "calls, the first asked for", fake.Calls()[0].Request.Model)
	// Output:
	// rate_limited 2s true
	// transient 0s true
	// done small
	// done small
	// 4 calls, the first asked for small
}

// A streaming request receives the answer in chunks, split after each space,
// that add up to the Response's Text.
func ExampleOutcome_streaming() {
	fake := modeltest.NewFake(modeltest.Outcome{
		Response: modeltest.Answer("the quick brown fox").Response,
		TTFT:     time.Millisecond,
	})
	req := request("hi")
	var chunks []string
	req.OnChunk = func(c portico.Chunk) error { chunks = append(chunks, c.Text); return nil }
	resp, _ := fake.Generate(context.Background(), req)
	fmt.Printf("%q\n", chunks)
	fmt.Println(strings.Join(chunks, "") == resp.Text)
	// Output:
	// ["the " "quick " "brown " "fox"]
	// true
}

// Faults injects each kind of fault into its fraction of calls, chosen
// deterministically from the seed.
func ExampleFaults() {
	faults := modeltest.MustFaults(modeltest.FaultConfig{
		Seed: 1,
		Rates: map[modeltest.FaultKind]float64{
			modeltest.Fault429:             0.10,
			modeltest.Fault503:             0.05,
			modeltest.FaultContextOverflow: 0.01,
		},
	})
	m := portico.Chain(modeltest.NewFake(), faults.Wrap)
	classes := map[portico.Class]int{}
	for range 1000 {
		_, err := m.Generate(context.Background(), request("hi"))
		classes[portico.ClassOf(err)]++
	}
	fmt.Println(faults.Counts())
	fmt.Println(classes)
	// Output:
	// map[none:843 429:107 503:36 context_overflow:14]
	// map[ok:843 transient:36 rate_limited:107 incompatible:14]
}

// A CapacityServer serves its slots in FIFO order, and still serves calls whose callers
// gave up: here one caller gives up while the server is down, and the server
// spends a service on it before answering the next caller.
func ExampleCapacityServer() {
	s, _ := modeltest.NewCapacityServer(modeltest.CapacityConfig{Slots: 1, ServiceTime: time.Millisecond})
	s.SetDown(true)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := s.Generate(ctx, request("impatient"))
		gaveUp <- err
	}()
	for s.Stats().Queued == 0 {
		runtime.Gosched()
	}
	cancel()
	fmt.Println(portico.ClassOf(<-gaveUp))
	s.SetDown(false)
	resp, _ := s.Generate(context.Background(), request("patient"))
	fmt.Printf("%s %+v\n", resp.Text, s.Stats())
	// Output:
	// canceled
	// ok {Arrived:2 Queued:0 Busy:0 Useful:1 Wasted:1 Dropped:0 Rejected:0}
}
