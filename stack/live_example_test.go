package stack_test

import (
	"context"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

// A canary's share raised at run time, and its limit tightened: the
// canary keeps its limiter (and the level of its bucket), and a Config
// New would refuse leaves the one in force serving.
func ExampleStack_Update() {
	config := func(canaryWeight float64, canaryRPM int) stack.Config {
		return stack.Config{
			Routes: []stack.Route{
				{Route: portico.Route{Name: "stable", Model: modeltest.NewFake(modeltest.Answer("stable"))}},
				{
					Route:   portico.Route{Name: "canary", Model: modeltest.NewFake(modeltest.Answer("canary"))},
					Limiter: &ratelimit.Config{Limits: ratelimit.Limits{Requests: canaryRPM}},
				},
			},
			Kind: stack.Weighted{100 - canaryWeight, canaryWeight},
		}
	}
	s, err := stack.New(config(1, 600))
	if err != nil {
		fmt.Println(err)
		return
	}
	lim := s.Limiter("canary")
	if err := s.Update(config(10, 300)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("canary's limiter kept:", s.Limiter("canary") == lim)

	err = s.Update(config(-1, 300)) // a negative weight
	fmt.Println("refused:", portico.ClassOf(err))
	resp, err := s.Generate(context.Background(), &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "hello")},
		MaxOutputTokens: 16,
	})
	fmt.Println("still serving:", err == nil && resp.Text != "")
	// Output:
	// canary's limiter kept: true
	// refused: permanent
	// still serving: true
}
