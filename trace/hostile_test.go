package trace

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"go.opentelemetry.io/otel/codes"
)

// TestCaptureContentPanics checks that a panic in the user's redaction
// function, on the request's content (request layer, before the call) or on
// the answer's (request layer, after it: attempt spans capture no content),
// reaches the caller with every span ended, the request span marked as an
// error and an attempt span (which ended before) as it was.
func TestCaptureContentPanics(t *testing.T) {
	for _, tc := range []struct {
		name     string
		panicsOn string       // the text whose capture panics
		calls    int          // calls of the model, want
		status   []codes.Code // of the spans ended, in order, want
	}{
		{"on the prompt", "prompt", 0, []codes.Code{codes.Error}}, // the request layer captures input before calling next
		{"on the answer", "answer", 1, []codes.Code{codes.Unset, codes.Error}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSDK(t)
			tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp, CaptureContent: func(x string) string {
				if x == tc.panicsOn {
					panic("redactor")
				}
				return "redacted"
			}})
			calls := 0
			m := tr.Wrap(tr.WrapAttempt(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				calls++
				return &portico.Response{Text: "answer", FinishReason: portico.FinishStop}, nil
			})))
			func() {
				defer func() {
					if r := recover(); r != "redactor" {
						t.Errorf("recover() = %v, want redactor", r)
					}
				}()
				_, _ = m.Generate(context.Background(), &portico.Request{Model: "m",
					Messages: []portico.Message{portico.Text(portico.RoleUser, "prompt")}})
			}()
			if calls != tc.calls {
				t.Errorf("model calls = %d, want %d", calls, tc.calls)
			}
			spans := s.rec.Ended()
			if len(spans) != len(tc.status) {
				t.Fatalf("%d spans ended, want %d", len(spans), len(tc.status))
			}
			for i, sp := range spans {
				if sp.Status().Code != tc.status[i] {
					t.Errorf("span %q status = %v, want %v", sp.Name(), sp.Status(), tc.status[i])
				}
			}
		})
	}
}

// TestNilRequestAndNilResponse checks that a nil request passes through both
// layers untraced, to be classified by the layers inside, and that a Model
// breaking its contract with (nil, nil) still yields ended spans without
// response attributes.
func TestNilRequestAndNilResponse(t *testing.T) {
	s := newSDK(t)
	tr := mustNew(t, Config{TracerProvider: s.tp, MeterProvider: s.mp})
	var got []*portico.Request
	m := tr.Wrap(tr.WrapAttempt(portico.ModelFunc(func(_ context.Context, r *portico.Request) (*portico.Response, error) {
		got = append(got, r)
		return nil, nil
	})))
	resp, err := m.Generate(context.Background(), nil)
	if resp != nil || err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("Generate(nil) = %v, %v, model saw %v; want nil, nil and the nil request passed on", resp, err, got)
	}
	if n := len(s.rec.Ended()); n != 0 {
		t.Errorf("Generate(nil): %d spans, want 0", n)
	}
	resp, err = m.Generate(context.Background(), &portico.Request{Model: "m"})
	if resp != nil || err != nil {
		t.Fatalf("Generate = %v, %v; want the model's nil, nil", resp, err)
	}
	spans := s.rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	sameAttrs(t, "attempt", spans[0].Attributes(), map[string]string{"portico.attempt.model": "m", "portico.attempt.index": "0"})
	sameAttrs(t, "request", spans[1].Attributes(), map[string]string{"gen_ai.operation.name": "chat",
		"gen_ai.request.model": "m", "gen_ai.request.stream": "false", "portico.attempts": "1"})
}

// TestSpanNameCacheBounded checks that the span-name cache keeps at most
// maxCachedNames names, none of a model name longer than maxCachedModelLen,
// and that its count does not keep growing once full (it would wrap around).
func TestSpanNameCacheBounded(t *testing.T) {
	tr := mustNew(t, Config{})
	long := strings.Repeat("m", maxCachedModelLen+1)
	if got := tr.name(long, false); got != "chat "+long {
		t.Fatalf("name(long, false) = %.20q..., want \"chat mmm...\"", got)
	}
	if got := tr.name(long, true); got != "attempt "+long {
		t.Fatalf("name(long, true) = %.20q..., want \"attempt mmm...\"", got)
	}
	if n := tr.nNames.Load(); n != 0 {
		t.Errorf("after a %d-byte model name: cache count = %d, want 0", len(long), n)
	}
	for i := range 3 * maxCachedNames {
		model := "model-" + strconv.Itoa(i)
		if got := tr.name(model, false); got != "chat "+model {
			t.Fatalf("name(%q, false) = %q, want %q", model, got, "chat "+model)
		}
		if got := tr.name(model, true); got != "attempt "+model {
			t.Fatalf("name(%q, true) = %q, want %q", model, got, "attempt "+model)
		}
	}
	n := 0
	tr.names.Range(func(any, any) bool { n++; return true })
	if n != maxCachedNames || tr.nNames.Load() != maxCachedNames {
		t.Errorf("cache: %d entries, count %d; want %d, %d", n, tr.nNames.Load(), maxCachedNames, maxCachedNames)
	}
}
