package spend

import (
	"cmp"
	"fmt"
	"math"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/rules"
)

// Config configures [Budgets]. Limits (or Tier and Tiers) and Routes are
// required; every other zero field is a default.
type Config struct {
	// Key maps a request to its budgets' key: a tenant, a tier, or a key of
	// the caller's choosing. Nil means [ByClient] (Identity.ClientKey);
	// an empty key is a key like any other, shared by every request that
	// maps to it.
	Key func(*portico.Request) string
	// Limits are each key's budgets, at most one per Window.
	Limits []Limit
	// Tier maps a request to its key's tier (a tenant's plan), and Tiers
	// gives each tier its Limits, as ratelimit.Config's do: a key's limits
	// are Tiers[Tier(req)] when that tier exists, else Limits (which may
	// then be empty: such keys have no budget). One without the other is
	// an error.
	Tier  func(*portico.Request) string
	Tiers map[string][]Limit
	// Routes are the Capabilities of the routes a request may take: its
	// estimated cost is the most [portico.Capabilities.EstimateCost] of
	// those that fit it (of all, when none fits), with the Estimator's
	// input: the rule routing's Contract.MaxCost applies, so Steer's
	// MaxCost and the routing layer below agree on what a route may spend.
	// Package stack fills it with its routes' when empty.
	Routes []portico.Capabilities
	// Estimator estimates input tokens; nil means
	// [portico.DefaultEstimator]. Package stack fills it with the group's.
	Estimator portico.Estimator
	// Steer routes a key near its limit to cheaper routes: when what its
	// budgets have left is below the request's estimate, the request goes
	// on with Contract.MaxCost lowered to what is left, so that a routing
	// layer below skips the routes that could spend more ([portico.Capabilities.Fits]'s
	// "cost"), if any route of Routes fits it so; otherwise it goes on
	// unchanged. Off by default.
	Steer bool
	// Shared keeps the budgets in a store shared by every instance
	// (Shared.Store; nil keeps them in a [Memory] of this process). While
	// the store fails, with FailOpen each instance decides on its own
	// Memory with 1/Instances of each limit; without, calls are refused
	// (Rejected, RefusedBy SpendBudget). Either reports an
	// [portico.EventSharedStore] ("spend:fail_open", "spend:fail_closed").
	Shared portico.Shared[Store]
}

// ByClient keys budgets on Identity.ClientKey.
func ByClient(r *portico.Request) string { return r.Identity.ClientKey }

// check returns the first field of c that can only be a mistake.
func (c *Config) check() error {
	err := cmp.Or(c.checkShape(), checkLimits("Limits", c.Limits))
	for tier, ls := range c.Tiers {
		err = cmp.Or(err, checkLimits(fmt.Sprintf("Tiers[%q]", tier), ls))
	}
	for i := 0; err == nil && i < len(c.Routes); i++ {
		if err = c.Routes[i].Validate(); err != nil {
			return fmt.Errorf("spend: Config.Routes[%d]: %w", i, err)
		}
	}
	return err
}

// checkShape returns the first of c's top-level fields that contradicts
// another: routes, tiers, limits and the shared store.
func (c *Config) checkShape() error {
	tiered, open := c.Tier != nil, c.Shared.FailOpen
	return rules.First(
		rules.If(len(c.Routes) == 0, "spend: no Config.Routes: a request's cost could not be estimated"),
		rules.If(!tiered && len(c.Tiers) > 0, "spend: Config.Tiers without Config.Tier"),
		rules.If(tiered && len(c.Tiers) == 0, "spend: Config.Tier without Config.Tiers"),
		rules.If(!tiered && len(c.Limits) == 0, "spend: no Config.Limits"),
		rules.If(open && c.Shared.Instances <= 0, "spend: Config.Shared.FailOpen needs Shared.Instances > 0"),
		rules.If(!open && c.Shared.Instances != 0, "spend: Config.Shared.Instances without FailOpen"),
	)
}

func checkLimits(field string, ls []Limit) error {
	var seen [numWindows]bool
	for i, l := range ls {
		switch {
		case l.Window < Minute || l.Window > Month:
			return fmt.Errorf("spend: Config.%s[%d].Window %v is not a Window", field, i, l.Window)
		case seen[l.Window]:
			return fmt.Errorf("spend: Config.%s has two %v budgets", field, l.Window)
		case !(l.Amount > 0) || math.IsInf(l.Amount, 1):
			return fmt.Errorf("spend: Config.%s[%d].Amount %v is not a finite amount > 0", field, i, l.Amount)
		}
		seen[l.Window] = true
	}
	return nil
}
