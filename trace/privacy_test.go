package trace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// everything renders every name, attribute, event, status and link of the
// spans as one string.
func everything(spans []sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	for _, sp := range spans {
		fmt.Fprintln(&b, sp.Name(), sp.Status().Description)
		for _, kv := range sp.Attributes() {
			fmt.Fprintln(&b, kv.Key, kv.Value.String())
		}
		for _, ev := range sp.Events() {
			fmt.Fprintln(&b, ev.Name)
			for _, kv := range ev.Attributes {
				fmt.Fprintln(&b, kv.Key, kv.Value.String())
			}
		}
		for _, l := range sp.Links() {
			for _, kv := range l.Attributes {
				fmt.Fprintln(&b, kv.Key, kv.Value.String())
			}
		}
	}
	return b.String()
}

// metricText renders every metric's name and data point attributes.
func metricText(rm metricdata.ResourceMetrics) string {
	var b strings.Builder
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			fmt.Fprintf(&b, "%s %+v\n", m.Name, m.Data)
		}
	}
	return b.String()
}

// TestNoContentByDefault runs the full scenario, streamed and not, with
// tracing, metrics and a debug-level JSON logger, and searches every span
// attribute, event, status, metric point and log line for the canary that
// the prompt, the answer and the tool arguments all carry.
func TestNoContentByDefault(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSDK(t)
				var logs bytes.Buffer
				tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai",
					Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				resp, err := scenario(tr).Generate(context.Background(), scenarioRequest(stream))
				if err != nil || !containsCanary(resp.Text) {
					t.Fatalf("Generate = %v, %v; want an answer carrying the canary", resp, err)
				}
				var rm metricdata.ResourceMetrics
				if err := s.reader.Collect(context.Background(), &rm); err != nil {
					t.Fatal(err)
				}
				for what, text := range map[string]string{
					"spans": everything(s.rec.Ended()), "metrics": metricText(rm), "logs": logs.String(),
				} {
					if len(text) < 100 {
						t.Errorf("%s: only %d bytes recorded, the search would prove nothing", what, len(text))
					}
					if containsCanary(text) {
						t.Errorf("%s contain the canary:\n%s", what, text)
					}
				}
			})
		})
	}
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:4])
}

// TestCaptureContent checks the opt-in: with a hashing CaptureContent the
// request span carries gen_ai.input.messages and gen_ai.output.messages with
// every text and argument hashed, and still no canary anywhere.
func TestCaptureContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, CaptureContent: hash})
		req := scenarioRequest(false)
		if _, err := tr.Wrap(answering(0)).Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		sp := s.rec.Ended()[0]
		got := attrs(sp.Attributes())
		wantIn := `[{"role":"system","parts":[{"type":"text","content":"` + hash("system says "+canary) + `"}]},` +
			`{"role":"user","parts":[{"type":"text","content":"` + hash("user says "+canary) + `"}]}]`
		if got["gen_ai.input.messages"] != wantIn {
			t.Errorf("gen_ai.input.messages = %s, want %s", got["gen_ai.input.messages"], wantIn)
		}
		wantOut := `[{"role":"assistant","parts":[{"type":"text","content":"` + hash("the answer is "+canary) + `"},` +
			`{"type":"tool_call","id":"call_1","name":"lookup","arguments":"` + hash(`{"q":"`+canary+`"}`) + `"}],"finish_reason":"stop"}]`
		if got["gen_ai.output.messages"] != wantOut {
			t.Errorf("gen_ai.output.messages = %s, want %s", got["gen_ai.output.messages"], wantOut)
		}
		var v any
		if err := json.Unmarshal([]byte(got["gen_ai.output.messages"]), &v); err != nil {
			t.Errorf("gen_ai.output.messages is not JSON: %v", err)
		}
		if text := everything(s.rec.Ended()); containsCanary(text) {
			t.Errorf("spans contain the canary despite hashing:\n%s", text)
		}
	})
}

// TestContentOffByDefault checks that without CaptureContent neither message
// attribute is set.
func TestContentOffByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
		if _, err := tr.Wrap(answering(0)).Generate(context.Background(), scenarioRequest(false)); err != nil {
			t.Fatal(err)
		}
		got := attrs(s.rec.Ended()[0].Attributes())
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages"} {
			if v, ok := got[k]; ok {
				t.Errorf("%s = %q, want it absent", k, v)
			}
		}
	})
}
