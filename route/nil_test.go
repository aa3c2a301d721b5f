package route

import (
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// Every router refuses a typed nil Model (a nil *modeltest.Fake here; a nil
// *openai.Model in a service) when it is built, as a nil one.
func TestTypedNilModel(t *testing.T) {
	good := portico.Route{Name: "good", Model: modeltest.NewFake()}
	typed := portico.Route{Name: "typed", Model: (*modeltest.Fake)(nil)}
	for name, build := range map[string]func() error{
		"NewRouter": func() error { _, err := NewRouter(RouterConfig{Routes: []portico.Route{good, typed}}); return err },
		"NewThreshold": func() error {
			_, err := NewThreshold(ThresholdConfig{Strong: typed, Weak: good, Scorer: func(*portico.Request) float64 { return 0 }})
			return err
		},
		"NewCascade": func() error {
			_, err := NewCascade(CascadeConfig{Steps: []Step{{Route: typed}, {Route: good}}})
			return err
		},
		"NewBalancer": func() error {
			_, err := NewBalancer(BalancerConfig{Replicas: []portico.Route{good, typed}})
			return err
		},
	} {
		if err := build(); err == nil || !strings.HasPrefix(err.Error(), "route: ") {
			t.Errorf("%s with a typed nil Model = %v, want an error starting with \"route: \"", name, err)
		}
	}
}
