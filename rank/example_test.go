package rank_test

import (
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/rank"
)

// One policy orders the candidates of a fallback group and picks a router's
// route: here, cost with a penalty for errors.
func ExampleOrder() {
	routes := []portico.Route{{Name: "frontier"}, {Name: "small"}, {Name: "flaky"}}
	cands := []rank.Candidate{
		{Index: 0, Route: &routes[0], EstimatedCost: 0.030, Weight: 1},
		{Index: 1, Route: &routes[1], EstimatedCost: 0.002, Weight: 1},
		{Index: 2, Route: &routes[2], EstimatedCost: 0.001, ErrorRate: 0.5, Weight: 1},
	}
	policy := rank.Weighted{Cost: 1, ErrorRate: 0.1}.Score
	for _, c := range rank.Order(cands, policy) {
		fmt.Printf("%s %.3f\n", c.Route.Name, policy(c))
	}
	// Output:
	// small 0.002
	// frontier 0.030
	// flaky 0.051
}
