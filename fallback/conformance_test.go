package fallback

import (
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
	"github.com/portico-llm/portico/modeltest"
)

// suiteCaps fit the conformance suite's request (text and image, tools, model
// class "small", 1000 input tokens).
var suiteCaps = portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, Tools: true, ModelClass: "small", ContextWindow: 8192}

func TestConformance(t *testing.T) {
	t.Run("one route", func(t *testing.T) {
		modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
			return MustNew(Config{Routes: []portico.Route{{Name: "a", Model: base, Capabilities: suiteCaps}}})
		})
	})
	t.Run("two routes with a breaker", func(t *testing.T) {
		modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
			br := breaker.MustNew(breaker.Config{Name: "a"})
			return MustNew(Config{Routes: []portico.Route{
				{Name: "a", Model: br.Wrap(base), Health: br, Capabilities: suiteCaps},
				{Name: "b", Model: base, Capabilities: suiteCaps},
			}})
		})
	})
}
