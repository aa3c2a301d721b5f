package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"testing/synctest"
)

// TestLogs checks one record per request and per attempt with seed 003's
// fields, and that a nil Logger logs nothing (and does not panic).
func TestLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSDK(t)
		var buf bytes.Buffer
		tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, Provider: "openai",
			Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
		if _, err := scenario(tr).Generate(context.Background(), scenarioRequest(true)); err != nil {
			t.Fatal(err)
		}
		var recs []map[string]any
		dec := json.NewDecoder(&buf)
		for dec.More() {
			var r map[string]any
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, r)
		}
		if len(recs) != 5 {
			t.Fatalf("%d log records, want 5 (4 attempts, 1 request)", len(recs))
		}
		type want struct {
			msg, level, model, outcome, class, attemptID string
			status                                       float64
		}
		wants := []want{
			{LogAttempt, "WARN", "gpt-4o", "transient", "transient", "", 503},
			{LogAttempt, "WARN", "gpt-4o", "transient", "transient", "a-1", 503},
			{LogAttempt, "WARN", "gpt-4o", "transient", "transient", "a-2", 503},
			{LogAttempt, "INFO", "gpt-4o-mini", "accepted", "ok", "", 0},
			{LogRequest, "INFO", "gpt-4o", "accepted", "ok", "", 0},
		}
		for i, w := range wants {
			r := recs[i]
			if r["msg"] != w.msg || r["level"] != w.level || r["model"] != w.model || r["outcome"] != w.outcome ||
				r["error_class"] != w.class || r["status"] != w.status || r["operation_id"] != "op-1" || r["provider"] != "openai" {
				t.Errorf("record %d = %v, want %+v", i, r, w)
			}
			if w.msg == LogAttempt && r["attempt_id"] != w.attemptID {
				t.Errorf("record %d attempt_id = %v, want %q", i, r["attempt_id"], w.attemptID)
			}
		}
		req := recs[4]
		for k, v := range map[string]any{
			"route": "b", "attempts": 4.0, "fallback_source": "a", "fallback_reason": "transient",
			"validation": "accepted", "breaker_state": "", "input_tokens": 100.0, "output_tokens": 20.0,
			"cached_input_tokens": 64.0, "cost": 0.0012, "latency": 680e6, "ttft": 680e6, "ratelimit_wait": 50e6,
			"response_model": "gpt-4o-mini-2024-07-18", "response_id": "chatcmpl-b1",
		} {
			if req[k] != v {
				t.Errorf("request record %s = %v, want %v", k, req[k], v)
			}
		}
	})
}

// TestNilLogger checks that the zero Config (global no-op providers, nil
// Logger) passes calls through.
func TestNilLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := mustNew(t, Config{})
		resp, err := scenario(tr).Generate(context.Background(), scenarioRequest(false))
		if err != nil || resp.Route != "b" {
			t.Fatalf("Generate = %v, %v; want route b", resp, err)
		}
	})
}
