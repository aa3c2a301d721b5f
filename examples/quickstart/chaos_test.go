package main

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"strings"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// TestChaosDrill is the -chaos drill in a synctest bubble, each rate's fakes
// served over net.Pipe: the three providers' real SDKs, every fault kind of
// the fakes on 10%, 30% and 50% of calls, on virtual time (the stalls that
// only a 1 s attempt timeout ends take no real time). After each run every
// invariant holds (invariants.violations, with no overshoot allowed: on
// virtual time a call returns at its deadline or before), and the
// accounting is exact: each tool step is sent twice, each server saw
// exactly the attempts its route sent, and each execution key's side effect
// ran once. Across the three runs every fault kind was injected.
func TestChaosDrill(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 1,200 requests through three SDKs")
	}
	const n = 320
	drawn := map[fakeopenai.FaultKind]int{}
	for _, rate := range chaosRates {
		t.Run(fmt.Sprintf("%.0f%%", 100*rate), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := runConfig{requests: n, concurrency: 32, clients: 12, seed: 11, pipe: true}
				var out bytes.Buffer
				vs, err := runChaos(t.Context(), &out, cfg, []float64{rate}, "")
				if err != nil || len(vs) != 1 {
					t.Fatalf("runChaos = %d runs, %v; want 1, nil:\n%s", len(vs), err, out.String())
				}
				v := vs[0]
				t.Logf("\n%s", out.String())
				// A quarter of the requests are tool steps, each sent twice.
				if tools := n / 4; v.requests != n+tools || v.effectDos > 2*tools || v.effectKeys == 0 || v.effectRuns != v.effectKeys {
					t.Errorf("requests = %d, want %d + %d replays; %d keys ran %d times for %d Do calls, want each once",
						v.requests, n, tools, v.effectKeys, v.effectRuns, v.effectDos)
				}
				for k, c := range v.faults {
					drawn[k] += c
				}
			})
		})
	}
	for k := fakeopenai.NoFault + 1; k <= fakeopenai.FaultDisconnect; k++ {
		if drawn[k] == 0 {
			t.Errorf("fault %v was never injected over the drill (%v)", k, drawn)
		}
	}
}

// TestChaosLoopback runs the -chaos mode as the command does, over
// loopback, at one rate and a small load: the invariants hold on real
// time too, file descriptors included, with the overshoot a busy machine's
// scheduling allows.
func TestChaosLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a second or two of real HTTP load")
	}
	var out bytes.Buffer
	vs, err := runChaos(context.Background(), &out, runConfig{requests: 64, concurrency: 16, clients: 8, seed: 3}, []float64{0.3}, "")
	if err != nil || len(vs) != 1 {
		t.Fatalf("runChaos = %d runs, %v; want 1, nil:\n%s", len(vs), err, out.String())
	}
	for _, line := range []string{"\nopenai ", "faults injected ", "every request ended ", "attempts vs bound ", "deadline ", "side effects ", "left behind ", "canary "} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the drill's output lacks %q:\n%s", line, out.String())
		}
	}
}

// TestWatchFindsTheCanary checks the checker: a span attribute, a span
// event, a slog record and a line of the standard logger that carry the
// canary are each found, and clean ones are not counted.
func TestWatchFindsTheCanary(t *testing.T) {
	w, err := newWatch()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	tr := w.provider.Tracer("test")
	_, clean := tr.Start(context.Background(), "clean")
	clean.End()
	_, attr := tr.Start(context.Background(), "attr")
	attr.SetAttributes(attribute.String("gen_ai.input", "say "+canary))
	attr.End()
	_, event := tr.Start(context.Background(), "event")
	event.AddEvent("retry", oteltrace.WithAttributes(attribute.String("error", "upstream echoed "+canary)))
	event.End()
	w.logger.Info("clean")
	w.logger.Debug("retry", "err", "echo: "+canary)
	log.Print("sdk: " + canary)
	spans, spanLeaks, records, recordLeaks := w.leaks(canary)
	if spans != 3 || spanLeaks != 2 || records != 3 || recordLeaks != 2 {
		t.Errorf("leaks = %d spans (%d with the canary), %d records (%d); want 3 (2), 3 (2)", spans, spanLeaks, records, recordLeaks)
	}
}

// TestChaosMenu checks the fault menu: every kind, on equal shares adding
// up to the rate, each status as its provider sends it.
func TestChaosMenu(t *testing.T) {
	for route := range dial.N {
		fs := chaosFaults(0.3, route)
		kinds, total := map[fakeopenai.FaultKind]bool{}, 0.0
		for _, f := range fs {
			kinds[f.Kind] = true
			total += f.Fraction
		}
		if len(kinds) != int(fakeopenai.FaultDisconnect) || total < 0.3-1e-9 || total > 0.3+1e-9 {
			t.Errorf("route %d: %d kinds, fractions add up to %v; want all %d kinds on 0.3", route, len(kinds), total, fakeopenai.FaultDisconnect)
		}
	}
	if f := chaosFaults(0.1, dial.Anthropic)[3]; f.Status != 529 {
		t.Errorf("Anthropic's overload = %d, want 529", f.Status)
	}
	if f := chaosFaults(0.1, dial.OpenAI)[0]; f.Status != 429 || f.RetryAfterMsHeader == 0 {
		t.Errorf("OpenAI's 429 = %+v, want one with retry-after-ms", f)
	}
}
