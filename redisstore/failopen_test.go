package redisstore

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestFailOpenShares: three instances share one tenant's 60 requests a
// minute through a real redis-server, each calling 10 times a second
// (fifteen times the limit), and the server fails: stopped (SIGSTOP) for
// 10 s, paused (CLIENT PAUSE) for 5 s, or killed and restarted empty
// after 5 s. Failing open, the instances admit from the outage's first
// call, together at least 80% of what the shared limit would have
// admitted of the same calls over the outage (a Limiter in memory is
// given every call), and over every interval at most b + r·dt plus the
// allowance of ratelimit's documentation: r·d for the outage's time d in
// the interval, b·(N-1)/N for what the shares held beyond Redis as it
// began and N-1 requests for the shares' lead; plus b once a killed server has come back empty (its buckets are
// full again: a store that lost its data forgets what it admitted). Run
// with -v for the figures.
func TestFailOpenShares(t *testing.T) {
	const n, b, r = 3, 60.0, 1.0 // instances; burst; requests per second
	for _, tc := range []struct {
		name  string
		warm  time.Duration // load before the fault: the burst is spent
		fault func(t *testing.T, srv *redistest.Server) (end func())
		lost  float64 // the allowance a store that lost its data adds
	}{
		{"stopped 10s", 4 * time.Second, func(t *testing.T, srv *redistest.Server) func() {
			pid := serverPID(t, srv)
			signal(t, pid, syscall.SIGSTOP)
			time.Sleep(10 * time.Second)
			return func() { signal(t, pid, syscall.SIGCONT) }
		}, 0},
		{"paused 5s", 4 * time.Second, func(t *testing.T, srv *redistest.Server) func() {
			srv.Pause(t, 5*time.Second)
			time.Sleep(5 * time.Second)
			return func() { srv.Unpause(t) }
		}, 0},
		{"killed, restarted after 5s", 4 * time.Second, func(t *testing.T, srv *redistest.Server) func() {
			signal(t, serverPID(t, srv), syscall.SIGKILL)
			srv.Stop() // reaps it
			time.Sleep(5 * time.Second)
			return srv.Restart
		}, b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			lim := ratelimit.Limits{Requests: 60}
			ref, err := ratelimit.New(ratelimit.Config{Limits: lim, Key: ratelimit.ByClient})
			if err != nil {
				t.Fatal(err)
			}
			ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				return &portico.Response{Text: "ok"}, nil
			})
			refM := ref.Wrap(ok)
			var ms []portico.Model
			for range n {
				s := newStore(t, srv, Config{Timeout: DefaultTimeout, Probe: 20 * time.Millisecond})
				l, err := ratelimit.New(ratelimit.Config{Limits: lim, Key: ratelimit.ByClient,
					Shared: ratelimit.Shared{Store: s.Buckets(), FailOpen: true, Instances: n}})
				if err != nil {
					t.Fatal(err)
				}
				ms = append(ms, l.Wrap(ok))
			}
			req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "tenant"}}
			var (
				mu       sync.Mutex
				admitted []time.Duration
				from, to time.Duration = math.MaxInt64, math.MaxInt64 // the outage
				fleetIn  int
				refIn    int
			)
			start := time.Now()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for i, m := range ms {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(50*time.Millisecond + time.Duration(rng.Int64N(int64(100*time.Millisecond)))):
						}
						mu.Lock()
						at := time.Since(start)
						_, rerr := refM.Generate(context.Background(), req)
						in := at >= from && at < to
						if rerr == nil && in {
							refIn++
						}
						mu.Unlock()
						_, err := m.Generate(context.Background(), req)
						if err == nil {
							mu.Lock()
							admitted = append(admitted, at)
							if in {
								fleetIn++
							}
							mu.Unlock()
						}
					}
				})
			}
			time.Sleep(tc.warm)
			mu.Lock()
			from = time.Since(start)
			mu.Unlock()
			end := tc.fault(t, srv)
			mu.Lock()
			to = time.Since(start)
			mu.Unlock()
			end()
			time.Sleep(3 * time.Second) // the store back: its refill, then the steady rate
			close(stop)
			wg.Wait()

			slices.Sort(admitted)
			d := (to - from).Seconds()
			worst, beyond := math.Inf(-1), math.Inf(-1) // over b + r·dt; over b + r·dt + r·d
			for i := range admitted {
				for j := i; j < len(admitted); j++ {
					dt := (admitted[j] - admitted[i]).Seconds()
					down := max(0, (min(to, admitted[j]) - max(from, admitted[i])).Seconds())
					got := float64(j - i + 1)
					worst = max(worst, got-(b+r*dt))
					beyond = max(beyond, got-(b+r*dt+r*down))
				}
			}
			ratio := float64(fleetIn) / float64(refIn)
			t.Logf("%s (%.1f s): admitted %d of what the shared limit would admit, %d (%.0f%%); worst excess over b + r·dt %.2f (allowance r·d %.1f + b(N-1)/N %.0f + N-1 + %.0f), beyond b + r·dt + r·d %.2f",
				tc.name, d, fleetIn, refIn, 100*ratio, worst, r*d, b*(n-1)/n, tc.lost, beyond)
			if ratio < 0.8 {
				t.Errorf("admitted %d during the outage, the shared limit %d: %.2f, want >= 0.80", fleetIn, refIn, ratio)
			}
			if allowance := b*(n-1)/n + (n - 1) + tc.lost; beyond > allowance {
				t.Errorf("an interval admitted %.2f beyond b + r·dt + r·d, want at most %.0f", beyond, allowance)
			}
		})
	}
}

// serverPID returns srv's process id, from INFO server.
func serverPID(t *testing.T, srv *redistest.Server) int {
	t.Helper()
	info, err := srv.Client(t).Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(info, "process_id:")
	if !found {
		t.Fatal("no process_id in INFO server")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}
