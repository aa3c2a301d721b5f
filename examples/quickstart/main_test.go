package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuickstart runs the main job on a small load over loopback and checks the
// accounting that must hold whatever the faults and the machine's speed: every
// request ends accepted or classified, every attempt the stack counted reached
// the server, and retries stay within the budget's bound.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about a second of real HTTP load")
	}
	cfg := runConfig{requests: 120, concurrency: 16, clients: 3, seed: 7}
	var out bytes.Buffer
	res, err := run(context.Background(), &out, cfg)
	if err != nil {
		t.Fatalf("run = %v", err)
	}
	failed := 0
	for _, n := range res.failed {
		failed += n
	}
	if res.requests != cfg.requests || res.accepted+failed != cfg.requests {
		t.Errorf("requests = %d, accepted %d + failed %d; want %d ending one way or the other", res.requests, res.accepted, failed, cfg.requests)
	}
	retries := 0
	for _, n := range res.retries {
		retries += n
	}
	// Calls rejected locally (breaker open, shed) never reach the server; every
	// other attempt does, exactly once.
	if want := res.requests + retries - res.failed[portico.Rejected]; res.serverRequests != want {
		t.Errorf("server saw %d requests, want requests %d + retries %d - rejected %d = %d",
			res.serverRequests, res.requests, retries, res.failed[portico.Rejected], want)
	}
	// Retry budget: per client key, at most Burst (10) + Ratio (0.1) * requests.
	if bound := 3*10 + cfg.requests/10; retries > bound {
		t.Errorf("retries = %d, want <= %d (budget bound)", retries, bound)
	}
	if res.accepted < cfg.requests*8/10 {
		t.Errorf("accepted = %d of %d, want at least 80%% with 18%% faults and 3 attempts", res.accepted, cfg.requests)
	}
	for _, line := range []string{"requests ", "accepted ", "attempts/request ", "retries by class ", "budget exhaustions ", "latency "} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	if _, err := run(context.Background(), &bytes.Buffer{}, runConfig{requests: 0, concurrency: 1, clients: 1}); err == nil {
		t.Errorf("run with -n 0 = nil error, want one")
	}
}
