package route

import (
	"math"
	"strings"
	"testing"
)

// Negative Affinity settings are a configuration error that NewBalancer
// returns, as PrefixAware's are; they used to be taken silently as the
// defaults. NewPicker called directly panics with the same message.
func TestAffinitySettings(t *testing.T) {
	rs, _ := replicas(2)
	bad := []Affinity{
		{ShortTokens: -1},
		{MaxSessions: -1},
		{ShortTokens: math.MinInt},
		{MaxSessions: math.MinInt},
		{ShortTokens: -1, MaxSessions: -1},
		{ShortTokens: 10, MaxSessions: -5},
		{ShortTokens: -5, MaxSessions: 10},
	}
	for _, s := range bad {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("NewBalancer(%+v) panicked: %v, want an error", s, r)
				}
			}()
			b, err := NewBalancer(BalancerConfig{Replicas: rs, Strategy: s})
			if b != nil || err == nil || !strings.HasPrefix(err.Error(), "route: Affinity") {
				t.Errorf("NewBalancer(%+v) = %v, %v; want nil and an error starting route: Affinity", s, b, err)
			}
			if verr := s.Validate(); verr == nil || err == nil || verr.Error() != err.Error() {
				t.Errorf("Affinity(%+v).Validate() = %v, want NewBalancer's error %v", s, verr, err)
			}
		}()
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "route:") {
					t.Errorf("NewPicker(%+v) panic = %q, want a message starting route:", s, r)
				}
			}()
			s.NewPicker(nil)
		}()
	}

	// Good values, zero (the documented defaults) and the edges of the range
	// included, build a picker with exactly those settings.
	good := []struct {
		s                  Affinity
		wantShort, wantMax int
	}{
		{Affinity{}, 2048, 65536},
		{Affinity{ShortTokens: 1, MaxSessions: 1}, 1, 1},
		{Affinity{ShortTokens: 0, MaxSessions: 1}, 2048, 1},
		{Affinity{ShortTokens: 1, MaxSessions: 0}, 1, 65536},
		{Affinity{ShortTokens: math.MaxInt, MaxSessions: math.MaxInt}, math.MaxInt, math.MaxInt},
	}
	for _, g := range good {
		if err := g.s.Validate(); err != nil {
			t.Errorf("Affinity(%+v).Validate() = %v, want nil", g.s, err)
		}
		b, err := NewBalancer(BalancerConfig{Replicas: rs, Strategy: g.s})
		if err != nil {
			t.Errorf("NewBalancer(%+v) = %v, want no error", g.s, err)
			continue
		}
		p := b.picker.(*affinityPicker)
		if p.short != g.wantShort || p.max != g.wantMax {
			t.Errorf("NewBalancer(%+v) picker settings = (short %d, max %d), want (%d, %d)", g.s, p.short, p.max, g.wantShort, g.wantMax)
		}
	}

	// MaxSessions 1 keeps one session: a second long session evicts the first.
	b := mustBalancer(t, rs, Affinity{ShortTokens: 1, MaxSessions: 1})
	for _, id := range []string{"A", "B"} {
		r := userReq("x")
		r.Identity.SessionID = id
		if _, err := b.Pick(PickInfo{Request: r, InputTokens: 2}); err != nil {
			t.Fatalf("Pick(session %s) = %v", id, err)
		}
	}
	if n := b.picker.(*affinityPicker).len(); n != 1 {
		t.Errorf("sessions kept with MaxSessions 1 = %d, want 1", n)
	}
}
