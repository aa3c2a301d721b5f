package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/retry"
)

// seed001Budget is the budget of seed 001's outage: a fixed allowance of
// 20 retries for the client (and its destination), three attempts per
// request, no waits.
func seed001Retrier(t testing.TB, store retry.BudgetStore) *retry.Retrier {
	r, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Schedule: retry.Immediate},
		Budget: retry.Budget{Burst: 20, DestinationBurst: 20, NoRefill: true, Shared: retry.Shared{Store: store}}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var outageReq = &portico.Request{Model: "m", Identity: portico.Identity{ClientKey: "tenant"}}

// instanceAttempts runs n always-failing requests through r, concurrently,
// and returns the attempts they made.
func instanceAttempts(r *retry.Retrier, n int) int64 {
	var attempts atomic.Int64
	m := r.Wrap(portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		attempts.Add(1)
		return failing.Generate(ctx, req)
	}))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { m.Generate(context.Background(), outageReq) })
	}
	wg.Wait()
	return attempts.Load()
}

// TestSharedBudgetTenInstances: ten instances, each with its own Retrier
// and Store over one Redis, send 100 always-failing requests; a shared
// budget of 20 retries allows 100 + 20 attempts, where ten local budgets
// of 20 allow 100 + 10*20 = 300.
func TestSharedBudgetTenInstances(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		shared bool
		want   int64
	}{{"shared", true, 120}, {"local", false, 300}} {
		t.Run(tc.name, func(t *testing.T) {
			var total atomic.Int64
			var wg sync.WaitGroup
			for range 10 {
				var store retry.BudgetStore
				if tc.shared {
					store = newStore(t, srv, Config{Prefix: "t" + tc.name + ":"}).Budgets()
				}
				r := seed001Retrier(t, store)
				wg.Go(func() { total.Add(instanceAttempts(r, 10)) })
			}
			wg.Wait()
			if got := total.Load(); got != tc.want {
				t.Errorf("attempts = %d, want %d", got, tc.want)
			}
		})
	}
}

// childEnv names the Redis address a re-executed test binary runs one
// instance against (see TestSharedBudgetTenProcesses).
const childEnv = "REDISSTORE_TEST_INSTANCE_ADDR"

// child runs one instance when the binary was re-executed for it, prints
// its attempts and reports true; TestMain then exits.
func child() bool {
	addr := os.Getenv(childEnv)
	if addr == "" {
		return false
	}
	c := redistest.NewClient(addr)
	defer c.Close()
	s, err := New(Config{Client: c, Prefix: "procs:", Timeout: testTimeout})
	if err != nil {
		fmt.Println("error:", err)
		return true
	}
	r, err := retry.New(retry.Config{MaxAttempts: 3, Backoff: retry.Backoff{Schedule: retry.Immediate},
		Budget: retry.Budget{Burst: 20, DestinationBurst: 20, NoRefill: true, Shared: retry.Shared{Store: s.Budgets()}}})
	if err != nil {
		fmt.Println("error:", err)
		return true
	}
	fmt.Println("attempts:", instanceAttempts(r, 10))
	return true
}

// TestSharedBudgetTenProcesses is TestSharedBudgetTenInstances with each
// instance a process of its own: the test binary, re-executed.
func TestSharedBudgetTenProcesses(t *testing.T) {
	srv := redistest.Start(t)
	outs := make([]strings.Builder, 10)
	cmds := make([]*exec.Cmd, 10)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+srv.Addr)
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	total := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("instance %d: %v: %s", i, err, outs[i].String())
		}
		found := false
		sc := bufio.NewScanner(strings.NewReader(outs[i].String()))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "attempts: "); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatal(err)
				}
				total += n
				found = true
			}
		}
		if !found {
			t.Fatalf("instance %d printed no attempts: %s", i, outs[i].String())
		}
	}
	if total != 120 {
		t.Errorf("attempts over ten processes = %d, want 120", total)
	}
}
