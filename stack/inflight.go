package stack

import "github.com/portico-llm/portico/inflight"

// InFlight returns the tenant in-flight cap (Config.InFlight), or nil when
// there is none.
func (s *Stack) InFlight() *inflight.Caps { return s.now().inflight }
