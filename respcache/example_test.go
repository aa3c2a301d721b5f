package respcache_test

import (
	"context"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/respcache"
)

// The second identical request of a tenant is answered from the cache;
// another tenant's is not.
func ExampleCache() {
	calls := 0
	model := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		calls++
		return &portico.Response{Text: "Paris", FinishReason: portico.FinishStop}, nil
	})
	c, err := respcache.New(respcache.Config{})
	if err != nil {
		panic(err)
	}
	m := c.Wrap(model)
	ask := func(tenant string) {
		req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "Capital of France?")},
			Identity: portico.Identity{ClientKey: tenant}}
		resp, _ := m.Generate(context.Background(), req)
		fmt.Println(tenant, resp.Text, "calls:", calls)
	}
	ask("a")
	ask("a")
	ask("b")
	fmt.Printf("%+v\n", c.Stats())
	// Output:
	// a Paris calls: 1
	// a Paris calls: 1
	// b Paris calls: 2
	// {Hits:1 Misses:2}
}
