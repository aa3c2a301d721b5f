package redisstore

import (
	"context"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// TestSettlesLateOrNever: ten Limiters, each on its own Store and client
// over one Redis (through a Proxy), call as fast as they can for 900 ms
// with random costs, each call using less than it reserved (a refund) or
// more (a surcharge), its settle queued and sent after the call. From 150
// ms the store fails: stopped (SIGSTOP) 150 ms, killed (SIGKILL) and
// restarted empty after 150 ms, paused (CLIENT PAUSE) 150 ms, its replies
// 60 ms late (beyond the 50 ms Timeout) for 150 ms, or replies lost every
// 5 ms for 300 ms (to clients that resend, as go-redis does by default);
// the Limiters fail closed; one instance "crashes" at 300 ms with its
// queue unsent. Each settle is counted when the server's reply came (the
// Store's hook), a settle lost not at all: over every interval the
// events the server applied (admissions, surcharges wholly inside and
// before an admission counted, refunds that may lie inside: see
// worstCharged) stay within b + r*dt, plus b after the
// kill (the server restarted full). What the crashed instance and the
// failed scripts lost is reported: refunds (stricter) and surcharges (the
// allowance against the calls' own use). Each fault runs twice: the
// Limiters alone, and each Limiter as the route of a preset stack with
// the route's retry budget on the same Store, whose admissions carry the
// queued settles in their own scripts (Store.Admit).
func TestSettlesLateOrNever(t *testing.T) {
	for _, via := range []string{"limiter", "admission"} {
		t.Run(via, func(t *testing.T) { settlesLateOrNever(t, via == "admission") })
	}
}

func settlesLateOrNever(t *testing.T, admission bool) {
	const b, perSec, maxCost = 200, 1000, 30
	q := []portico.Message{portico.Text(portico.RoleUser, "q")}
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, srv *redistest.Server, p *redistest.Proxy)
		lost  float64 // the allowance of a store that lost its data
	}{
		{"stop", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) {
			pid := serverPID(t, srv)
			signal(t, pid, syscall.SIGSTOP)
			time.Sleep(150 * time.Millisecond)
			signal(t, pid, syscall.SIGCONT)
		}, 0},
		{"kill", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) {
			signal(t, serverPID(t, srv), syscall.SIGKILL)
			srv.Stop()
			time.Sleep(150 * time.Millisecond)
			srv.Restart()
		}, b},
		{"pause", func(t *testing.T, srv *redistest.Server, _ *redistest.Proxy) {
			srv.Pause(t, 150*time.Millisecond)
			time.Sleep(150 * time.Millisecond)
		}, 0},
		{"latency", func(_ *testing.T, _ *redistest.Server, p *redistest.Proxy) {
			p.Delay(60 * time.Millisecond)
			time.Sleep(150 * time.Millisecond)
			p.Reset()
		}, 0},
		{"lost replies", func(_ *testing.T, _ *redistest.Server, p *redistest.Proxy) {
			for range 60 {
				p.DropReply("EVAL")
				time.Sleep(5 * time.Millisecond)
			}
			p.Reset()
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := srv.Proxy(t)
			var mu sync.Mutex
			var adm, sur, ref []span
			var made, appliedSur, appliedRef, madeSur, madeRef float64
			hook := func(_ string, tokens float64, queued, applied time.Time) {
				mu.Lock()
				defer mu.Unlock()
				if applied.IsZero() {
					// No reply: the script may have run when the server
					// came back. A refund is credited as if applied at any
					// time after it was queued; a surcharge, which would
					// only tighten the bucket, is left out.
					if tokens > 0 {
						ref = append(ref, span{queued, queued.Add(time.Hour), tokens})
					}
					return
				}
				if tokens > 0 {
					ref = append(ref, span{queued, applied, tokens})
					appliedRef += tokens
				} else {
					sur = append(sur, span{queued, applied, -tokens}) // a surcharge adds: see worstCharged
					appliedSur -= tokens
				}
			}
			type instance struct {
				s *Store
				m portico.Model
			}
			var ins [10]instance
			for i := range ins {
				c := redis.NewClient(&redis.Options{Addr: p.Addr, ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond})
				t.Cleanup(func() { c.Close() })
				s := newStore(t, srv, Config{Client: c, Timeout: DefaultTimeout, Probe: 20 * time.Millisecond})
				s.settled = hook
				rcfg := ratelimit.Config{Limits: ratelimit.Limits{Tokens: perSec * 60, TokenBurst: b},
					Estimator: portico.EstimatorFunc(func(*portico.Request) int { return 1 }), Shared: ratelimit.Shared{Store: s.Buckets()}}
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				var rmu sync.Mutex
				model := portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
					reserve := 1 + req.MaxOutputTokens
					rmu.Lock()
					used := 1 + rng.IntN(reserve+reserve/4) // a fifth of the calls use more than they reserved
					rmu.Unlock()
					mu.Lock()
					if used < reserve {
						madeRef += float64(reserve - used)
					} else {
						madeSur += float64(used - reserve)
					}
					mu.Unlock()
					return &portico.Response{Text: "ok", Usage: portico.Usage{InputTokens: 1, OutputTokens: used - 1}}, nil
				})
				if admission {
					st, err := stack.New(stack.Config{Routes: []stack.Route{{Route: portico.Route{Name: "r", Model: model}, Limiter: &rcfg,
						Retry: retry.Config{MaxAttempts: 1, Budget: retry.Budget{Shared: retry.Shared{Store: s.Budgets()}}}}}})
					if err != nil {
						t.Fatal(err)
					}
					ins[i] = instance{s, st}
					continue
				}
				l, err := ratelimit.New(rcfg)
				if err != nil {
					t.Fatal(err)
				}
				ins[i] = instance{s, l.Wrap(model)}
			}
			// Warm: each client dialed and the scripts loaded, so that a
			// slow first dial (-race, a loaded machine) is no outage.
			for i := range ins {
				for try := 0; ; try++ {
					_, err := ins[i].m.Generate(context.Background(), &portico.Request{Model: "m", MaxOutputTokens: 1, Messages: q})
					if err == nil {
						break
					}
					if try == 100 {
						t.Fatalf("instance %d never admitted a call: %v", i, err)
					}
					time.Sleep(30 * time.Millisecond) // beyond the Probe
				}
				ins[i].s.flush()
			}
			mu.Lock()
			adm, sur, ref, madeRef, madeSur, appliedRef, appliedSur = nil, nil, nil, 0, 0, 0, 0
			mu.Unlock()
			time.Sleep(time.Second * b / perSec) // the bucket full again
			start := time.Now()
			deadline := start.Add(900 * time.Millisecond)
			crash := start.Add(300 * time.Millisecond)
			var wg sync.WaitGroup
			for i := range ins {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(i), 13))
					for time.Now().Before(deadline) {
						if i == 0 && time.Now().After(crash) {
							// A crash: the queued settles are never sent (the
							// client is closed under them).
							ins[0].s.c.Close()
							return
						}
						req := &portico.Request{Model: "m", MaxOutputTokens: 1 + rng.IntN(maxCost), Messages: q}
						from := time.Now()
						var called time.Time
						_, err := ins[i].m.Generate(context.Background(), req)
						called = time.Now() // the admission lies between from and the model's call, before this
						if err == nil {
							mu.Lock()
							adm = append(adm, span{from, called, float64(1 + req.MaxOutputTokens)})
							made++
							mu.Unlock()
						}
					}
				})
			}
			time.Sleep(150 * time.Millisecond)
			tc.fault(t, srv, p)
			wg.Wait()
			for i := range ins {
				ins[i].s.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			ex := worstCharged(adm, sur, ref, b, perSec)
			t.Logf("%s: %v calls; refunds %.0f made, %.0f applied; surcharges %.0f made, %.0f applied (lost: the allowance); worst excess over b + r*dt %.3f tokens (allowed %v)",
				tc.name, made, madeRef, appliedRef, madeSur, appliedSur, ex, tc.lost)
			if ex > tc.lost+1e-3 {
				t.Errorf("%s: the server's events exceed b + r*dt by %.3f tokens, allowed %v", tc.name, ex, tc.lost)
			}
			if made == 0 {
				t.Fatal("no call admitted: the test measured nothing")
			}
		})
	}
}
