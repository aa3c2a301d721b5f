package route

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// hung is a Model that answers only when its context ends, with that end's
// classified error, and records when it was called and ended.
type hung struct{ start, end time.Time }

func (h *hung) Generate(ctx context.Context, _ *portico.Request) (*portico.Response, error) {
	h.start = time.Now()
	<-ctx.Done()
	h.end = time.Now()
	return nil, portico.FromContext(ctx)
}

// TestCascadeShare: under a 20 s deadline a hung first step is cut at its
// share (DefaultStepShare of the time left, 11.25 s), Ambiguous with cause
// ErrStepTimeout, and the next step answers before the caller's deadline.
// A share under DefaultStepFaultAfter is also an unanswered deadline cut,
// which breakers count in their run of consecutive failures only; with Share 1, or when no later step could follow (unavailable),
// the step has the caller's whole deadline, and the caller's deadline ends
// the cascade.
func TestCascadeShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		share    float64
		down     bool          // the second step is unavailable
		cut      time.Duration // when the first step is cut
		answered bool
		short    bool // the cut matches portico.ErrDeadlineCut and ErrUnanswered
	}{
		{"default share", 20 * time.Second, 0, false, 11250 * time.Millisecond, true, false},
		{"short deadline", 8 * time.Second, 0, false, 4500 * time.Millisecond, true, true},
		{"share 1", 20 * time.Second, 1, false, 20 * time.Second, false, false},
		{"no step follows", 20 * time.Second, 0, true, 20 * time.Second, false, false},
		{"share 0.25", 20 * time.Second, 0.25, false, 5 * time.Second, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				first := &hung{}
				health := &switchHealth{}
				health.down.Store(tc.down)
				c, err := NewCascade(CascadeConfig{Share: tc.share, Steps: []Step{
					{Route: portico.Route{Name: "cheap", Model: first}, Accept: func(*portico.Request, *portico.Response) float64 { return 1 }, Threshold: 0.5},
					{Route: portico.Route{Name: "strong", Model: answer("ok", portico.Usage{}, nil), Health: health}},
				}})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
				defer cancel()
				start := time.Now()
				resp, err := c.Generate(ctx, userReq("q"))
				if got := first.end.Sub(first.start); got != tc.cut {
					t.Errorf("first step ran %v, want %v", got, tc.cut)
				}
				if !tc.answered {
					if portico.ClassOf(err) != portico.Deadline || time.Since(start) != tc.deadline {
						t.Errorf("Generate = %v, %v after %v; want the caller's deadline at %v", resp, err, time.Since(start), tc.deadline)
					}
					return
				}
				if err != nil || resp.Route != "strong" || time.Since(start) != tc.cut {
					t.Fatalf("Generate = %v, %v after %v; want strong's answer at %v", resp, err, time.Since(start), tc.cut)
				}
				h := resp.Hops[0]
				if h.Route != "cheap" || portico.ClassOf(h.Err) != portico.Ambiguous || !errors.Is(h.Err, ErrStepTimeout) {
					t.Errorf("hop = %+v; want cheap, Ambiguous, ErrStepTimeout", h)
				}
				if got, un := errors.Is(h.Err, portico.ErrDeadlineCut), errors.Is(h.Err, portico.ErrUnanswered); got != tc.short || un != tc.short {
					t.Errorf("hop matches ErrDeadlineCut = %v, ErrUnanswered = %v; want %v", got, un, tc.short)
				}
			})
		})
	}
	one := []Step{{Route: portico.Route{Name: "a", Model: answer("ok", portico.Usage{}, nil)}}}
	for _, c := range []struct {
		cfg  CascadeConfig
		want string
	}{
		{CascadeConfig{Share: 1.5, Steps: one}, "route: NewCascade CascadeConfig.Share 1.5 is outside (0, 1]"},
		{CascadeConfig{Share: 1.5}, "route: NewCascade needs at least one step"},
	} {
		if _, err := NewCascade(c.cfg); err == nil || err.Error() != c.want {
			t.Errorf("NewCascade(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}
