package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// slowFirstChunk streams one chunk after d, then answers.
func slowFirstChunk(d time.Duration) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, portico.FromContext(ctx)
		}
		if err := req.OnChunk(portico.Chunk{Text: "ok"}); err != nil {
			return nil, err
		}
		return &portico.Response{Text: "ok", FinishReason: portico.FinishStop}, nil
	})
}

// TestOverridesFirstChunk: a route whose first-chunk timeout is 10 s
// and whose bounds allow up to 2 min serves a request that asks for 1 min
// and whose first chunk comes after 40 s; one that asks for 5 min is
// clamped to 2 min (cut there, its first chunk due at 3 min); one without
// overrides is cut at 10 s, and so is one on a route without bounds,
// whatever it asks; none may shorten it.
func TestOverridesFirstChunk(t *testing.T) {
	for _, c := range []struct {
		name   string
		bounds Bounds
		ask    time.Duration
		chunk  time.Duration
		cutAt  time.Duration // 0: answered
	}{
		{"lengthened within bounds", Bounds{FirstChunk: Range{Max: 2 * time.Minute}}, time.Minute, 40 * time.Second, 0},
		{"clamped to the bound", Bounds{FirstChunk: Range{Max: 2 * time.Minute}}, 5 * time.Minute, 3 * time.Minute, 2 * time.Minute},
		{"no override", Bounds{FirstChunk: Range{Max: 2 * time.Minute}}, 0, 40 * time.Second, 10 * time.Second},
		{"no bounds", Bounds{}, time.Minute, 40 * time.Second, 10 * time.Second},
		{"not shortened below the route's", Bounds{FirstChunk: Range{Max: 2 * time.Minute}}, time.Second, 5 * time.Second, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			r := MustNew(Config{MaxAttempts: 1, Timeouts: Timeouts{FirstChunk: 10 * time.Second}, Bounds: c.bounds})
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "think")}, OnChunk: func(portico.Chunk) error { return nil }}
			if c.ask > 0 {
				req.Overrides = &portico.Overrides{FirstChunk: c.ask}
			}
			start := time.Now()
			_, err := r.Wrap(slowFirstChunk(c.chunk)).Generate(context.Background(), req)
			took := time.Since(start)
			switch {
			case c.cutAt == 0 && (err != nil || took != c.chunk):
				t.Errorf("%s: %v after %v, want an answer after %v", c.name, err, took, c.chunk)
			case c.cutAt > 0 && (!errors.Is(err, ErrFirstChunkTimeout) || took != c.cutAt):
				t.Errorf("%s: %v after %v, want a first-chunk timeout at %v", c.name, err, took, c.cutAt)
			}
		})
	}
}

// TestOverridesMaxAttempts: on an always-503 route of 3 attempts whose
// bounds allow 1 to 5, a request asking 5 makes 5, one asking 9 is
// clamped to 5, one asking 1 makes 1; on a route without bounds, 3
// whatever it asks. The attempt timeout is clamped the same way.
func TestOverridesMaxAttempts(t *testing.T) {
	for _, c := range []struct {
		bounds    Bounds
		ask, want int
	}{
		{Bounds{MinAttempts: 1, MaxAttempts: 5}, 5, 5},
		{Bounds{MinAttempts: 1, MaxAttempts: 5}, 9, 5},
		{Bounds{MinAttempts: 1, MaxAttempts: 5}, 1, 1},
		{Bounds{}, 5, 3},
		{Bounds{}, 1, 3},
	} {
		synctest.Test(t, func(t *testing.T) {
			f := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503)})
			r := MustNew(Config{Bounds: c.bounds, Budget: Budget{Off: true}})
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, Overrides: &portico.Overrides{MaxAttempts: c.ask}}
			if _, err := r.Wrap(f).Generate(context.Background(), req); err == nil || f.Count() != c.want {
				t.Errorf("bounds %+v, asking %d: %d attempts (%v), want %d", c.bounds, c.ask, f.Count(), err, c.want)
			}
		})
	}
	if got := clampTimeout(time.Minute, 0, Range{Min: time.Second}); got != time.Minute {
		t.Errorf("a route without an attempt timeout and a Min lets a request set %v, want 1m", got)
	}
	if got := clampTimeout(time.Minute, 0, Range{Max: time.Hour}); got != 0 {
		t.Errorf("a route without an attempt timeout and a Max alone gives %v, want none (0)", got)
	}
	for _, b := range []Bounds{{FirstChunk: Range{Min: 2, Max: 1}}, {Attempt: Range{Min: -1}}, {MinAttempts: 3, MaxAttempts: 2}} {
		if _, err := New(Config{Bounds: b}); err == nil {
			t.Errorf("New with Bounds %+v: nil error, want one", b)
		}
	}
}
