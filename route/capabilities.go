package route

import (
	"errors"
	"fmt"
	"slices"

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

// checkModels returns the error of the first of routes without a Model,
// each a kind ("route", "replica") of the constructor ctor, or nil.
func checkModels(ctor, kind string, routes []portico.Route) error {
	if i := slices.IndexFunc(routes, func(r portico.Route) bool { return portico.IsNil(r.Model) }); i >= 0 {
		return errors.New("route: " + ctor + " " + kind + " " + routes[i].Name + " has a nil Model")
	}
	return nil
}

// validate returns the error of s's Validate method, if it has one (see
// [Strategy]).
func validate(s Strategy) error {
	if v, ok := s.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}
