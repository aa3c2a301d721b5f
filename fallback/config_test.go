package fallback

import (
	"math"
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

// New (and Validate, which stack calls with one route) refuse each value that
// can only be a mistake with a message naming the field.
func TestConfigValidate(t *testing.T) {
	m := &fake{name: "a"}
	one := []portico.Route{{Name: "a", Model: m}}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Routes: one, Share: -0.5}, "fallback: Config.Share -0.5 is outside (0, 1]"},
		{Config{Routes: one, Share: 1.5}, "fallback: Config.Share 1.5 is outside (0, 1]"},
		{Config{Routes: one, Share: math.NaN()}, "fallback: Config.Share NaN is outside (0, 1]"},
		{Config{Routes: one, Independence: 9}, "fallback: unknown Config.Independence Independence(9)"},
		{Config{Routes: one, MaxCooldown: -time.Second}, "fallback: negative Config.MaxCooldown (-1s)"},
		{Config{Routes: one, Continuations: -1}, "fallback: negative Config.Continuations (-1)"},
		{Config{Routes: one, Share: 2, Continuations: -1, Independence: 9}, "fallback: Config.Share 2 is outside (0, 1]"},
		{Config{}, "fallback: Config.Routes is empty"},
		{Config{Routes: []portico.Route{{Model: m}}}, "fallback: route 0 has no Name"},
		{Config{Routes: []portico.Route{{Name: "a"}}}, "fallback: route a has a nil Model"},
		{Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "a", Model: m}}}, "fallback: route name a is not unique"},
		{Config{Routes: []portico.Route{{Name: "a", Model: m, Capabilities: portico.Capabilities{MaxOutput: -1}}}},
			"fallback: route a: portico: Capabilities.MaxOutput is negative (-1)"},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
		if g, err := New(tt.cfg); g != nil || err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, %v; want nil, %q", tt.cfg, g, err, tt.want)
		}
	}
	if err := (Config{Routes: one, Share: 1}).Validate(); err != nil {
		t.Errorf("Validate(Share 1) = %v, want nil", err)
	}
}

// Each Independence is named, and a value past OtherRegion says its number.
func TestIndependenceString(t *testing.T) {
	for i, want := range map[Independence]string{AnyRoute: "any", OtherProvider: "other_provider",
		OtherRegion: "other_region", 9: "Independence(9)"} {
		if got := i.String(); got != want {
			t.Errorf("Independence(%d).String() = %q, want %q", int(i), got, want)
		}
	}
}
