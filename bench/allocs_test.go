//go:build !race

package bench

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/hedge"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// TestAllocs pins the allocations per request on the path users run: the
// preset (presetOver: two routes, client limits, validation, a no-op
// tracer, the default deadline) over each adapter over its in-memory fake
// (net.Pipe), beside the bare adapter and the bare SDK, for a whole answer
// and one streamed in 8 chunks. Every goroutine's allocations count, the
// fake server's and net/http's too, the same on each path; the collector
// is off while they are counted, since a collection empties net/http's
// pools and the calls after it allocate again what the pools held. The
// race detector's pools drop items at random: the file is left out under
// -race.
//
// What the preset adds is the same over the three adapters, counted
// against the bare adapter called with a deadline too (without one the
// anthropic SDK sets its own timeout, 8 allocations that the preset's
// deadline saves, and genai's call makes 4 fewer):
//   - 9 under the preset's own deadline, one deadline context per
//     request: the value that carries the deadline to the group (package
//     internal/due), the primary's context, ending at its share of it
//     (fallback.Config.Share: the context, its timer and the timer's
//     func, its cancel func), the context that carries the route's
//     cooldown, and the Done channel and registration of the SDK's
//     context below that net/http's wait makes (15 with the group's share
//     nested under a deadline context of the stack's);
//   - 8 under the caller's deadline, earlier than the preset's: the same
//     but the carried value;
//   - 1 without any deadline: the primary's context, which carries its
//     cooldown;
//   - 17 more with the group's hedging, no hedge sent: the race's state,
//     the primary's goroutine and cancelable context and the hedge's
//     timer;
//   - 35 for a stream of 8 chunks, none a chunk (40 over genai, 4 of them
//     genai's under a deadline): each layer's StreamWatch, the retry
//     layer's watchdog and the group's bound on the gaps between signs of
//     progress (a cancelable context and a timer each), the share.
func TestAllocs(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx := context.Background()
	caller, cancel := context.WithTimeout(ctx, time.Minute) // earlier than the preset's 2 minutes
	defer cancel()
	provs := providers(t)
	for _, p := range provs {
		defer p.close()
	}
	type want struct{ openai, anthropic, gemini float64 }
	for _, c := range []struct {
		name string
		call func(testing.TB, provider) func() error
		want want
	}{
		{"sdk", func(_ testing.TB, p provider) func() error { return func() error { return p.sdk(ctx) } },
			want{335, 371, 414}},
		{"adapter", over(ctx, adapter, whole),
			want{349, 386, 426}},
		{"adapter, caller's deadline", over(caller, adapter, whole),
			want{349, 378, 430}},
		{"preset", over(ctx, presetDefault, whole),
			want{358, 387, 439}},
		{"preset, caller's deadline", over(caller, presetDefault, whole),
			want{357, 386, 438}},
		{"preset, no deadline", over(ctx, presetNoDeadline, whole),
			want{350, 387, 427}},
		{"preset, group hedging", over(ctx, presetHedged, whole),
			want{375, 404, 456}},
		{"adapter, streamed", over(ctx, adapter, streamed),
			want{1024, 875, 1391}},
		{"preset, streamed", over(ctx, presetDefault, streamed),
			want{1053, 904, 1425}},
	} {
		for _, p := range provs {
			f := c.call(t, p)
			if err := f(); err != nil {
				t.Fatalf("%s, %s: %v", p.name, c.name, err)
			}
			w := map[string]float64{"openai": c.want.openai, "anthropic": c.want.anthropic, "gemini": c.want.gemini}[p.name]
			if got := testing.AllocsPerRun(100, func() { f() }); got != w {
				t.Errorf("%s, %s: allocs per request = %v, want %v", p.name, c.name, got, w)
			}
		}
	}
}

// over returns, for a provider, a call of the Model that build makes over
// its adapter with the request that req makes for its model, in ctx.
func over(ctx context.Context, build func(testing.TB, portico.Model) portico.Model, req func(model string) *portico.Request) func(testing.TB, provider) func() error {
	return func(tb testing.TB, p provider) func() error {
		m, r := build(tb, p.adapter), req(p.model)
		return func() error { _, err := m.Generate(ctx, r); return err }
	}
}

func adapter(_ testing.TB, m portico.Model) portico.Model { return m }

func presetDefault(tb testing.TB, m portico.Model) portico.Model {
	return presetOver(tb, m, 0, noopTracer(tb))
}

func presetNoDeadline(tb testing.TB, m portico.Model) portico.Model {
	return presetOver(tb, m, -1, noopTracer(tb))
}

// presetHedged is presetDefault with the group's hedging (Config.Hedge), a
// hedge sent after a second: none is sent, the fake answers at once.
func presetHedged(tb testing.TB, m portico.Model) portico.Model {
	s, err := stack.New(stack.Config{Routes: []stack.Route{
		{Route: portico.Route{Name: "primary", Model: m}},
		{Route: portico.Route{Name: "secondary", Model: m}},
	}, Client: &ratelimit.Config{Limits: clientLimits()}, Tracer: noopTracer(tb), Hedge: &hedge.Config{Delay: time.Second}})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func whole(model string) *portico.Request { return sdkRequest(model) }

func streamed(model string) *portico.Request {
	r := sdkRequest(model)
	r.OnChunk = func(portico.Chunk) error { return nil }
	return r
}
