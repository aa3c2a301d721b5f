package redisstore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestLeaseFaults: ten leased instances share one tenant's 6,000
// requests a minute (burst 1,000, so a lease holds 10) through a real
// redis-server behind a proxy, each calling about 66 times a second (6.6
// times the limit), and the store fails for 2 s: stopped (SIGSTOP),
// paused (CLIENT PAUSE), killed and restarted empty, slow (every reply
// 100 ms late, past the 50 ms Timeout), or losing the reply of one script
// in ten. Over every interval the requests admitted stay within
// b + r·dt + L + A: L the leases (10 instances of 10), A the allowance
// of failing open (r·d for the time d the store failed within the
// interval, b·(N-1)/N, N-1) or none failing closed; plus b once a killed
// server came back empty. Run with -v for the worst excess under each.
func TestLeaseFaults(t *testing.T) {
	const n, b, r, q = 10, 1000.0, 100.0, 10.0 // instances; burst; requests per second; a lease's cap
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, srv *redistest.Server, p *redistest.Proxy) (end func())
		lost  float64 // the allowance a store that lost its data adds
	}{
		{"stopped", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) func() {
			pid := serverPID(t, srv)
			signal(t, pid, syscall.SIGSTOP)
			time.Sleep(2 * time.Second)
			return func() { signal(t, pid, syscall.SIGCONT) }
		}, 0},
		{"paused", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) func() {
			srv.Pause(t, 2*time.Second)
			time.Sleep(2 * time.Second)
			return func() { srv.Unpause(t) }
		}, 0},
		{"killed", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) func() {
			signal(t, serverPID(t, srv), syscall.SIGKILL)
			srv.Stop()
			time.Sleep(2 * time.Second)
			return srv.Restart
		}, b},
		{"latency", func(t *testing.T, _ *redistest.Server, p *redistest.Proxy) func() {
			p.Delay(100 * time.Millisecond)
			time.Sleep(2 * time.Second)
			return func() { p.Delay(0) }
		}, 0},
		{"lost reply", func(t *testing.T, _ *redistest.Server, p *redistest.Proxy) func() {
			for range 20 {
				p.DropReply("EVAL")
				time.Sleep(100 * time.Millisecond)
			}
			return func() {}
		}, 0},
	} {
		for _, open := range []bool{true, false} {
			name := tc.name + map[bool]string{true: "/fail open", false: "/fail closed"}[open]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				srv := redistest.Start(t)
				p := srv.Proxy(t)
				lim := ratelimit.Limits{Requests: int(r * 60), RequestBurst: int(b)}
				var (
					mu       sync.Mutex
					admitted []time.Duration
					start    = time.Now()
				)
				ok := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
					at := time.Since(start)
					mu.Lock()
					admitted = append(admitted, at)
					mu.Unlock()
					return &portico.Response{Text: "ok"}, nil
				})
				var ms []portico.Model
				for range n {
					c := redistest.NewClient(p.Addr)
					t.Cleanup(func() { c.Close() })
					s := newStore(t, srv, Config{Client: c, Timeout: DefaultTimeout, Probe: 20 * time.Millisecond})
					sh := ratelimit.Shared{Store: s.Buckets()}
					if open {
						sh.FailOpen, sh.Instances = true, n
					}
					l, err := ratelimit.New(ratelimit.Config{Limits: lim, Key: ratelimit.ByClient, Sharing: ratelimit.Leased, Shared: sh})
					if err != nil {
						t.Fatal(err)
					}
					ms = append(ms, l.Wrap(ok))
				}
				req := &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "tenant"}}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for i, m := range ms {
					rng := rand.New(rand.NewPCG(uint64(i), 25))
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							case <-time.After(10*time.Millisecond + time.Duration(rng.Int64N(int64(10*time.Millisecond)))):
							}
							m.Generate(context.Background(), req)
						}
					})
				}
				time.Sleep(2 * time.Second) // the burst spent, the leases at their cap
				from := time.Since(start)
				end := tc.fault(t, srv, p)
				to := time.Since(start) + 100*time.Millisecond // and the probe that ends the outage
				end()
				time.Sleep(2 * time.Second)
				close(stop)
				wg.Wait()

				mu.Lock()
				defer mu.Unlock()
				slices.Sort(admitted)
				worst, beyond := math.Inf(-1), math.Inf(-1) // over b + r·dt; over b + r·dt + r·d (failing open)
				for i := range admitted {
					for j := i; j < len(admitted); j++ {
						dt := (admitted[j] - admitted[i]).Seconds()
						got := float64(j - i + 1)
						worst = max(worst, got-(b+r*dt))
						if open {
							down := max(0, (min(to, admitted[j]) - max(from, admitted[i])).Seconds())
							beyond = max(beyond, got-(b+r*dt+r*down))
						}
					}
				}
				allowance := n*q + tc.lost // the leases; a store that lost its data
				over := worst
				if open {
					allowance += b*(n-1)/n + (n - 1)
					over = beyond
				}
				failOpen := ""
				if open {
					failOpen = fmt.Sprintf(", failing open b(N-1)/N + N-1 %.0f", b*(n-1)/n+(n-1))
				}
				t.Logf("%s: %d admitted; worst excess over b + r·dt %.0f requests; over the bound (b + r·dt, + r·d failing open) %.0f, allowance %.0f (leases %.0f, lost data %.0f%s)",
					name, len(admitted), worst, over, allowance, n*q, tc.lost, failOpen)
				if over > allowance {
					t.Errorf("an interval admitted %.0f beyond the bound, want at most %.0f", over, allowance)
				}
			})
		}
	}
}
