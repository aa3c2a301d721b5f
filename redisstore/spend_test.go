package redisstore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/spend"
)

func spendAccount(key string, at time.Time) *spend.Account {
	return &spend.Account{Name: "n", Key: key, At: at,
		Limits: []spend.Limit{{Window: spend.Minute, Amount: 1}, {Window: spend.Month, Amount: 10}}}
}

// TestSpendStore: a reservation is admitted while every window has spent
// less than its amount, adds to each, says what was left; settlements add
// their delta (never below zero); a window's key expires a minute after
// the window, and a settlement of an expired window changes nothing.
func TestSpendStore(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv, Config{}).Spend()
	ctx := context.Background()
	at := time.Date(2030, 5, 6, 7, 8, 30, 0, time.UTC)
	a := spendAccount("tenant{1}", at)
	g, err := st.Reserve(ctx, a, 0.75)
	if err != nil || !g.Admitted || g.Remaining != 1 {
		t.Fatalf("first Reserve = %+v, %v; want admitted with 1 left", g, err)
	}
	if g, _ = st.Reserve(ctx, a, 0.75); !g.Admitted || g.Remaining != 0.25 {
		t.Errorf("second Reserve = %+v, want admitted with 0.25 left (the minute's)", g)
	}
	if g, _ = st.Reserve(ctx, a, 0.75); g.Admitted || g.Over != 0 || g.Remaining != -0.5 {
		t.Errorf("third Reserve = %+v, want refused by the minute (limit 0), -0.5 left", g)
	}
	if err := st.Settle(ctx, a, -0.5); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Spent(ctx, a); !near(got[0], 1) || !near(got[1], 1) {
		t.Errorf("Spent = %v, want [1 1]", got)
	}
	if err := st.Settle(ctx, a, -5); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Spent(ctx, a); got[0] != 0 || got[1] != 0 {
		t.Errorf("Spent after refunding more than spent = %v, want [0 0]", got)
	}
	keys, _ := st.spendKeys(a, 0)
	ttl := srv.Client(t).PTTL(ctx, keys[0]).Val()
	if want := 90 * time.Second; ttl > want || ttl < want-5*time.Second {
		t.Errorf("minute key's TTL = %v, want about %v (30 s left in the window and a minute)", ttl, want)
	}
	next := spendAccount("tenant{1}", at.Add(time.Minute))
	if g, _ = st.Reserve(ctx, next, 0.5); !g.Admitted || g.Remaining != 1 {
		t.Errorf("Reserve in the next minute = %+v, want admitted, 1 left", g)
	}
	srv.Client(t).Del(ctx, keys[0])
	st.Settle(ctx, a, 3)
	if got, _ := st.Spent(ctx, a); got[0] != 0 || !near(got[1], 3.5) {
		t.Errorf("Spent after settling into an expired minute = %v, want [0 3.5]", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestSpendLostReplyAppliesOnce: a reservation and a settlement whose
// replies were lost, resent by go-redis, apply once.
func TestSpendLostReplyAppliesOnce(t *testing.T) {
	srv := redistest.Start(t)
	p := srv.Proxy(t)
	st := retryingStore(t, p, Config{}).Spend()
	ctx := context.Background()
	a := spendAccount("t", time.Now())
	p.DropReply("EVAL")
	if g, err := st.Reserve(ctx, a, 0.25); err != nil || !g.Admitted {
		t.Fatalf("Reserve with its reply lost = %+v, %v", g, err)
	}
	p.DropReply("EVAL")
	if err := st.Settle(ctx, a, 0.5); err != nil {
		t.Fatalf("Settle with its reply lost = %v", err)
	}
	if got, _ := st.Spent(ctx, a); !near(got[0], 0.75) {
		t.Errorf("Spent = %v, want 0.75 (each applied once)", got)
	}
}

// TestSpendBoundTenInstances: ten instances of a service, each with its
// own client, Store and Budgets, over one Redis; 1,000 tenants with a day
// budget of 1, each called by two goroutines per instance with requests
// of estimates 0.1 to 0.5 (N_max 100 to 500 at 0.001 a token) that cost a
// random part of their estimate, all twenty goroutines on the same tenant
// at once until each of them is refused. Every
// tenant ends within one of its requests' estimate of its budget (the
// bound of package spend), the worst is logged; without the shared store
// (the control) ten instances spend up to ten budgets.
func TestSpendBoundTenInstances(t *testing.T) {
	srv := redistest.Start(t)
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			tenants := 1000
			if !shared {
				tenants = 50
			}
			route := portico.Capabilities{OutputPrice: 0.001}
			var (
				mu     sync.Mutex
				charge = make([]float64, tenants) // what each tenant was charged, all instances
				maxEst = make([]float64, tenants)
			)
			model := portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
				cost := float64(r.MaxOutputTokens) * route.OutputPrice * rand.Float64()
				return &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Cost: cost}, nil
			})
			var bs [10]*spend.Budgets
			for i := range bs {
				cfg := spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 1}}, Routes: []portico.Capabilities{route}}
				if shared {
					cfg.Shared.Store = newStore(t, srv, Config{Prefix: "bound:"}).Spend()
				}
				b, err := spend.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				bs[i] = b
			}
			var wg sync.WaitGroup
			var requests atomic.Int64
			for _, b := range bs {
				m := b.Wrap(model)
				for range 2 {
					wg.Go(func() {
						for idx := range tenants { // all twenty on the same tenant at once
							tenant := fmt.Sprintf("tenant-%d", idx)
							for {
								n := 100 + rand.IntN(401)
								req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")},
									MaxOutputTokens: n, Identity: portico.Identity{ClientKey: tenant}}
								resp, err := m.Generate(context.Background(), req)
								requests.Add(1)
								if err != nil {
									if portico.RefuserOf(err) != portico.SpendBudget {
										t.Errorf("tenant %s: %v", tenant, err)
									}
									break
								}
								mu.Lock()
								charge[idx] += resp.Cost
								maxEst[idx] = max(maxEst[idx], float64(n)*route.OutputPrice)
								mu.Unlock()
							}
						}
					})
				}
			}
			wg.Wait()
			worst, worstRel, over := 0.0, 0.0, 0
			for i := range tenants {
				s := charge[i]
				if shared {
					got, err := bs[0].Balances(context.Background(), &portico.Request{Identity: portico.Identity{ClientKey: fmt.Sprintf("tenant-%d", i)}})
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(got[0].Spent-s) > 1e-6 {
						t.Errorf("tenant %d: the store says %v spent, the answers cost %v", i, got[0].Spent, s)
					}
				}
				if s-1 >= maxEst[i] {
					over++
				}
				worst, worstRel = max(worst, s-1), max(worstRel, (s-1)/maxEst[i])
			}
			t.Logf("shared=%v: %d tenants, %d requests, worst overspend %.4f (%.0f%% of that tenant's largest estimate), %d tenants beyond one estimate",
				shared, tenants, requests.Load(), worst, 100*worstRel, over)
			if shared && over > 0 {
				t.Errorf("%d tenants spent more than 1 + their largest estimate, want none", over)
			}
			if !shared && worst < 1 {
				t.Errorf("control: worst overspend %.3f without the shared store, want more than a whole budget", worst)
			}
		})
	}
}
