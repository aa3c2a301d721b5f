package stack

import (
	"cmp"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/inflight"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/spend"
)

// Cache returns the response cache (Config.Cache), or nil when there is
// none; its Stats count the stack's hits and misses.
func (s *Stack) Cache() *respcache.Cache { return s.now().cache }

// InFlight returns the tenant in-flight cap (Config.InFlight), or nil when
// there is none.
func (s *Stack) InFlight() *inflight.Caps { return s.now().inflight }

// Spend returns the spend budgets (Config.Spend), or nil when there are
// none; its Balances read a tenant's.
func (s *Stack) Spend() *spend.Budgets { return s.now().spend }

// placeSpend fills c's zero fields that place the spend budgets: its
// Routes with the routes' Capabilities, its Estimator with the stack's
// est, and its Shared.Name with "spend".
func placeSpend(c *spend.Config, routes []Route, est portico.Estimator) {
	if len(c.Routes) == 0 {
		for i := range routes {
			c.Routes = append(c.Routes, routes[i].Capabilities)
		}
	}
	c.Estimator = cmp.Or(c.Estimator, est)
	named(&c.Shared, "spend")
}
