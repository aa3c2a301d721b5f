package route

import (
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// Every constructor refuses a route whose Capabilities can only be a
// mistake, with a message naming the constructor, the route and the field.
func TestConstructorsValidateCapabilities(t *testing.T) {
	m := modeltest.NewFake()
	good := portico.Route{Name: "good", Model: m}
	bad := portico.Route{Name: "bad", Model: m, Capabilities: portico.Capabilities{ContextWindow: -8}}
	tests := []struct {
		name string
		new  func() error
		want string
	}{
		{"router", func() error { _, err := NewRouter(RouterConfig{Routes: []portico.Route{good, bad}}); return err },
			`route: NewRouter route "bad": portico: Capabilities.ContextWindow is negative (-8)`},
		{"threshold", func() error { _, err := NewThreshold(ThresholdConfig{Weak: good, Strong: bad}); return err },
			`route: NewThreshold route "bad": portico: Capabilities.ContextWindow is negative (-8)`},
		{"cascade", func() error {
			_, err := NewCascade(CascadeConfig{Steps: []Step{{Route: good}, {Route: bad}}})
			return err
		},
			`route: NewCascade route "bad": portico: Capabilities.ContextWindow is negative (-8)`},
		{"balancer", func() error { _, err := NewBalancer(BalancerConfig{Replicas: []portico.Route{bad, good}}); return err },
			`route: NewBalancer route "bad": portico: Capabilities.ContextWindow is negative (-8)`},
		{"cascade, negative price", func() error {
			neg := portico.Route{Name: "neg", Model: m, Capabilities: portico.Capabilities{OutputPrice: -1}}
			_, err := NewCascade(CascadeConfig{Steps: []Step{{Route: neg}}})
			return err
		}, `route: NewCascade route "neg": portico: Capabilities.OutputPrice must be a finite price >= 0 (-1)`},
	}
	for _, tt := range tests {
		if err := tt.new(); err == nil || err.Error() != tt.want {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
