package stack_test

import (
	"context"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/retry"
	"github.com/portico-llm/portico/stack"
)

// A primary that is down and a fallback from another provider: the primary's
// retry layer gives up after one attempt here, the group moves on, and the answer
// says which route gave it and why the first was left.
func Example() {
	primary := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(503)))
	secondary := modeltest.NewFake(modeltest.Answer("Paris."))
	s, err := stack.New(stack.Config{
		Routes: []stack.Route{
			{
				Route: portico.Route{Name: "primary", Model: primary, Capabilities: portico.Capabilities{Provider: "openai"}},
				Retry: retry.Config{MaxAttempts: 1},
			},
			{Route: portico.Route{Name: "secondary", Model: secondary, Capabilities: portico.Capabilities{Provider: "azure"}}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := s.Generate(context.Background(), &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "Capital of France?")},
		MaxOutputTokens: 16,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text, "from", resp.Route)
	for _, h := range resp.Hops {
		fmt.Println("left", h.Route, "because", h.Reason)
	}
	// Output:
	// Paris. from secondary
	// left primary because transient
}
