package main

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// The simulation of seed 000, in steps of 0.1 s: 8 new requests per step
// (80/s) against one slot of 10 ms (100/s), the server down from 30 to 40 s,
// 340 s in all.
const (
	step        = 100 * time.Millisecond
	perStep     = 8
	steps       = 3400
	outageStart = 300 // step at which the server goes down
	outageEnd   = 400 // step at which it comes back
	seconds     = steps / 10
	arrivalRate = perStep * int(time.Second/step) // new requests per second
	capacity    = 100                             // calls served per second
	clients     = 100                             // client keys the requests are spread over
)

// DefaultPatience is how long a client waits for a call: the seed's clients
// wait 2 s, but its float test `ora - g[0] > 2.0` is false at 20 steps for
// 3342 of its 3400 start times, so they in fact wait 2.1 s. The extra 1 ms
// keeps every deadline off the server's 10 ms service grid, so no deadline
// ties with a completion and the run is deterministic (retry's
// TestSeed000Table explains both).
const DefaultPatience = 2101 * time.Millisecond

// policy is one row of the table: the layers between the clients and the
// server, and how the client's patience applies.
type policy struct {
	name string
	// drop makes the server skip calls whose caller gave up or would before
	// their service ends (modeltest.CapacityConfig.DropExpired): the
	// deadline travels with the call and the server honours it.
	drop bool
	// perRequest gives each request a context deadline of the patience, the
	// user's; otherwise the policy applies the patience to each attempt and
	// the request itself has no deadline (the seed's clients, which give up
	// on a call and send it again).
	perRequest bool
	// build wraps the server in the policy's layers.
	build func(srv portico.Model, patience time.Duration) (portico.Model, error)
}

// policies are the rows of the table: seed 000's four, built with package
// retry as its TestSeed000Table does (an attempt timeout of the patience,
// retries sent at once), then Portico's preset, stack.New with its defaults
// (3 attempts, full jitter from 500 ms, 10% retry budgets per client and per
// destination, a breaker, validation, a 2 min end-to-end deadline). The
// preset runs against both servers with the patience as the user's
// deadline, and once with it as the attempt timeout (Route.Retry.Timeouts),
// the only field set, so its retry layer gives up on a call as the seed's
// clients do.
var policies = []policy{
	{name: "no retry", build: seedRetry(1, retry.Budget{Off: true})},
	{name: "retry up to 3 times", build: seedRetry(4, retry.Budget{Off: true})},
	// The seed's one bucket, 10 s of 0.1 x 80/s, full at the start, shared by
	// every client: the destination's budget (the clients' own never bind).
	{name: "retry, 10% budget", build: seedRetry(4, retry.Budget{Ratio: 0.1, Burst: 80, DestinationBurst: 80})},
	{name: "retry, expired dropped", drop: true, build: seedRetry(4, retry.Budget{Off: true})},
	{name: "Portico preset, deadline", perRequest: true, build: preset(false)},
	{name: "Portico preset, deadline, expired dropped", perRequest: true, drop: true, build: preset(false)},
	{name: "Portico preset, attempt timeout", build: preset(true)},
}

// seedRetry is one of the seed's clients: up to attempts attempts, each
// given up after the patience and sent again at once while budget remains.
func seedRetry(attempts int, b retry.Budget) func(portico.Model, time.Duration) (portico.Model, error) {
	return func(srv portico.Model, patience time.Duration) (portico.Model, error) {
		r, err := retry.New(retry.Config{
			MaxAttempts: attempts,
			Budget:      b,
			Backoff:     retry.Backoff{Schedule: retry.Immediate},
			Timeouts:    retry.Timeouts{Attempt: patience},
			Destination: "capacity",
		})
		if err != nil {
			return nil, err
		}
		return r.Wrap(srv), nil
	}
}

// preset is stack.New with its defaults over the server; with attempt set,
// the patience is the route's attempt timeout.
func preset(attempt bool) func(portico.Model, time.Duration) (portico.Model, error) {
	return func(srv portico.Model, patience time.Duration) (portico.Model, error) {
		r := stack.Route{Route: portico.Route{Name: "capacity", Model: srv}}
		if attempt {
			r.Retry.Timeouts.Attempt = patience
		}
		return stack.New(stack.Config{Routes: []stack.Route{r}})
	}
}

// result is what one run saw, per second and in all.
type result struct {
	useful   [seconds]int // answers that reached a client still waiting
	attempts [seconds]int // calls that reached the server
	failed   map[portico.Class]int
	requests int
	// left is the calls queued or in service at the last arrival; stats the
	// server's counts once every request has ended.
	left  int
	stats modeltest.CapacityStats
}

// window is the mean useful answers per second over seconds [a, b) of the run.
func (r *result) window(a, b int) float64 {
	n := 0
	for _, u := range r.useful[a:b] {
		n += u
	}
	return float64(n) / float64(b-a)
}

// recovery is how many seconds after the outage's end goodput is back for
// good: the start of the first whole second from which every second serves at
// least 95% of the arrival rate. It is -1 when goodput never gets back.
func (r *result) recovery() int {
	end := outageEnd / 10
	for s := seconds - 1; s >= end; s-- {
		if r.useful[s]*100 < arrivalRate*95 {
			if s == seconds-1 {
				return -1
			}
			return s + 1 - end
		}
	}
	return 0
}

// simulate runs p in a synctest bubble of its own, on virtual time: 340 s of
// traffic take a fraction of a second.
func simulate(t *testing.T, p policy, patience time.Duration) *result {
	res := &result{failed: map[portico.Class]int{}}
	synctest.Test(t, func(t *testing.T) {
		srv, err := modeltest.NewCapacityServer(modeltest.CapacityConfig{Slots: 1, ServiceTime: time.Second / capacity, DropExpired: p.drop})
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.build(srv, patience)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		start := time.Now()
		client := func(i int) {
			ctx := context.Background()
			if p.perRequest {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, patience)
				defer cancel()
			}
			req := &portico.Request{
				Model:    "m",
				Messages: []portico.Message{portico.Text(portico.RoleUser, "q")},
				Identity: portico.Identity{ClientKey: clientKeys[i%clients]},
			}
			_, err := m.Generate(ctx, req)
			sec := int(time.Since(start) / time.Second)
			mu.Lock()
			defer mu.Unlock()
			res.requests++
			switch {
			case err != nil:
				res.failed[portico.ClassOf(err)]++
			case sec < seconds:
				res.useful[sec]++
			}
		}
		var wg sync.WaitGroup
		arrived := 0
		for k := range steps {
			switch k {
			case outageStart:
				srv.SetDown(true)
			case outageEnd:
				srv.SetDown(false)
			}
			if k > 0 && k%10 == 0 {
				a := srv.Stats().Arrived
				res.attempts[k/10-1], arrived = a-arrived, a
			}
			for j := range perStep {
				i := k*perStep + j
				wg.Go(func() { client(i) })
			}
			if k < steps-1 {
				time.Sleep(step)
			}
		}
		// The queue is sampled at the end of the last step, 0.5 ms early:
		// off the 10 ms grid on which the server finishes calls, so that no
		// completion ties with the sample, and after the retries of the
		// step's timed-out attempts, which fall 1 to 4 ms after it.
		time.Sleep(step - 500*time.Microsecond)
		st := srv.Stats()
		res.attempts[seconds-1] = st.Arrived - arrived
		res.left = st.Queued + st.Busy
		wg.Wait()
		res.stats = srv.Stats()
	})
	return res
}

var clientKeys = func() (k [clients]string) {
	for i := range k {
		k[i] = "client-" + strconv.Itoa(i)
	}
	return k
}()
