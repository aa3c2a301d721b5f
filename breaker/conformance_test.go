package breaker

import (
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return MustNew(Config{Name: "base"}).Wrap(base)
	})
}
