package stack

import (
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/respcache"
	"github.com/portico-llm/portico/spend"
)

// Cache returns the response cache (Config.Cache), or nil when there is
// none; its Stats count the stack's hits and misses.
func (s *Stack) Cache() *respcache.Cache { return s.now().cache }

// Spend returns the spend budgets (Config.Spend), or nil when there are
// none; its Balances read a tenant's.
func (s *Stack) Spend() *spend.Budgets { return s.now().spend }

// buildTenant builds the cache and the spend budgets cfg asks for, the
// budgets priced by the routes' Capabilities and est.
func (s *Stack) buildTenant(cfg Config, est portico.Estimator) error {
	var err error
	if cfg.Cache != nil {
		if s.cache, err = remember(s.memo, "cache", *cfg.Cache, respcache.New); err != nil {
			return fmt.Errorf("stack: Config.Cache: %w", err)
		}
	}
	if cfg.Spend != nil {
		c := *cfg.Spend
		if len(c.Routes) == 0 {
			for i := range cfg.Routes {
				c.Routes = append(c.Routes, cfg.Routes[i].Capabilities)
			}
		}
		if c.Estimator == nil {
			c.Estimator = est
		}
		if c.Shared.Store != nil && c.Shared.Name == "" {
			c.Shared.Name = "spend"
		}
		if s.spend, err = remember(s.memo, "spend", c, spend.New); err != nil {
			return fmt.Errorf("stack: Config.Spend: %w", err)
		}
	}
	return nil
}
