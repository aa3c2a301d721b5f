package stack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

// New refuses what can only be a mistake, whatever the number of routes,
// naming the field.
func TestNewValidates(t *testing.T) {
	f := modeltest.NewFake()
	badCaps := route("x", f)
	badCaps.Capabilities.ContextWindow = -1
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"capabilities", Config{Routes: []Route{badCaps}},
			`stack: route "x": portico: Capabilities.ContextWindow is negative (-1)`},
		{"share with one route", Config{Routes: []Route{route("x", f)}, Fallback: fallback.Config{Share: -0.5}},
			"stack: fallback: Config.Share -0.5 is outside (0, 1]"},
		{"share with two routes", Config{Routes: []Route{route("x", f), route("y", f)}, Fallback: fallback.Config{Share: -0.5}},
			"stack: fallback: Config.Share -0.5 is outside (0, 1]"},
	}
	for _, tt := range tests {
		if s, err := New(tt.cfg); s != nil || err == nil || err.Error() != tt.want {
			t.Errorf("%s: New = %v, %v; want nil, %q", tt.name, s, err, tt.want)
		}
	}
}

// A malformed Contract is refused at call time, before any route is called,
// as a Permanent error naming the field, with one route as with two.
func TestMalformedContract(t *testing.T) {
	for _, n := range []int{1, 2} {
		f := modeltest.NewFake()
		routes := []Route{route("x", f), route("y", f)}[:n]
		s, err := New(Config{Routes: routes})
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			k    portico.Contract
			want string
		}{
			{portico.Contract{Deadline: -time.Second}, "portico: permanent: negative Contract.Deadline"},
			{portico.Contract{MaxCost: -1}, "portico: permanent: negative or NaN Contract.MaxCost"},
		} {
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, Contract: &tt.k}
			_, err := s.Generate(context.Background(), req)
			if err == nil || err.Error() != tt.want || !errors.Is(err, portico.ErrPermanent) || f.Count() != 0 {
				t.Errorf("%d routes, %+v: err = %v after %d calls, want %q and no call", n, tt.k, err, f.Count(), tt.want)
			}
		}
	}
}
