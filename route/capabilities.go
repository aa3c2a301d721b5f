package route

import (
	"fmt"

	"github.com/portico-llm/portico"
)

// checkCapabilities returns the first route's [portico.Capabilities.Validate]
// error, prefixed with the constructor and the route's name, or nil.
func checkCapabilities(ctor string, routes ...portico.Route) error {
	for i := range routes {
		if err := routes[i].Capabilities.Validate(); err != nil {
			return fmt.Errorf("route: %s route %q: %w", ctor, routes[i].Name, err)
		}
	}
	return nil
}

// nilModel reports whether r has no Model.
func nilModel(r portico.Route) bool { return portico.IsNil(r.Model) }
