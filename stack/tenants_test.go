package stack

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// TestTenants: a million clients that each call once through the preset
// (client limits of 60 requests and 100,000 tokens a minute, two routes
// with their retry budgets) leave nothing in the client limiter once idle
// for two of its janitor periods (a minute each), with no call arriving.
// The retry budgets hold at most their MaxKeys (10,000) whatever the
// number of clients, and the heap they retain is at most 16 MiB. It logs
// the heap after GC: before, at the peak, and once idle (bench/README.md
// has the figures).
func TestTenants(t *testing.T) {
	n := 1_000_000
	if testing.Short() || raceEnabled {
		n = 50_000
	}
	synctest.Test(t, func(t *testing.T) {
		heap := func() uint64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		ok := &portico.Response{Text: "ok", FinishReason: portico.FinishStop, Usage: portico.Usage{InputTokens: 5, OutputTokens: 5}}
		m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return ok, nil })
		s, err := New(Config{Routes: []Route{route("a", m), route("b", m)},
			Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 60, Tokens: 100_000, Period: time.Minute}}})
		if err != nil {
			t.Fatal(err)
		}
		before := heap()
		req := hello.Clone()
		for i := range n {
			req.Identity.ClientKey = "tenant-" + strconv.Itoa(i)
			if _, err := s.Generate(t.Context(), req); err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
		}
		peak, keys := heap(), s.ClientLimiter().Keys()
		if keys < n/2 {
			t.Fatalf("after %d clients in one instant the client limiter holds %d keys, want about all of them", n, keys)
		}
		time.Sleep(2*time.Minute + time.Second)
		if k := s.ClientLimiter().Keys(); k != 0 {
			t.Errorf("two janitor periods after %d clients went idle the client limiter holds %d keys, want 0", n, k)
		}
		retained := heap()
		mib := func(b uint64) float64 { return float64(int64(b)-int64(before)) / (1 << 20) }
		t.Logf("%d clients: %d keys at the peak, heap %+.1f MiB at the peak, %+.1f MiB once idle", n, keys, mib(peak), mib(retained))
		if r := mib(retained); r > 16 {
			t.Errorf("%d clients idle for two janitor periods retain %.1f MiB of heap, want <= 16 MiB whatever the peak", n, r)
		}
		runtime.KeepAlive(s)
	})
}
