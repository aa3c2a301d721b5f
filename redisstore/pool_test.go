package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/stack"
)

// TestPoolSharedAcrossInstances: a key pool (stack.Pool) in two
// instances, each with its own Store over one Redis, Cooldowns as the
// group's cooldowns and its keys' breakers' Shared. Once instance 1 has
// seen key a's 429 (Retry-After 1 min) and key c's 401, instance 2
// calls neither: 20 of its requests go to key b, and a and c keep the
// one call each instance 1 made.
func TestPoolSharedAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	a := modeltest.NewFake(modeltest.Fail(modeltest.RateLimitError(time.Minute)))
	b := modeltest.NewFake(modeltest.Answer("b"))
	c := modeltest.NewFake(modeltest.Fail(modeltest.StatusError(401)))
	var stacks [2]*stack.Stack
	var cools [2]*Cooldowns
	for i := range stacks {
		cools[i] = newStore(t, srv, Config{Prefix: "pool:", Refresh: 10 * time.Millisecond}).Cooldowns()
		t.Cleanup(cools[i].Close)
		r := stack.Route{}
		r.Breaker.Shared = cools[i]
		routes, g, err := stack.Pool("gpt", r, stack.Key{Label: "a", Model: a}, stack.Key{Label: "b", Model: b}, stack.Key{Label: "c", Model: c})
		if err != nil {
			t.Fatal(err)
		}
		if stacks[i], err = stack.New(stack.Config{Routes: routes, Groups: []stack.Group{g}, Fallback: fallback.Config{Cooldowns: cools[i]}}); err != nil {
			t.Fatal(err)
		}
	}
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}
	for range 20 {
		if _, err := stacks[0].Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if a.Count() != 1 || c.Count() != 1 {
		t.Fatalf("instance 1 called a %d times, c %d; want once each", a.Count(), c.Count())
	}
	for end := time.Now().Add(5 * time.Second); !cools[1].Until("gpt/a").After(time.Now()) || !cools[1].Until("breaker:gpt/c").After(time.Now()); {
		if time.Now().After(end) {
			t.Fatal("instance 2 never saw a's cooldown and c's open breaker")
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := b.Count()
	for range 20 {
		resp, err := stacks[1].Generate(context.Background(), req)
		if err != nil || resp.Route != "gpt/b" {
			t.Fatalf("instance 2: %v, %v; want gpt/b's answer", resp, err)
		}
	}
	if a.Count() != 1 || c.Count() != 1 || b.Count()-before != 20 {
		t.Errorf("instance 2 called a %d, b %d, c %d times; want 0, 20, 0", a.Count()-1, b.Count()-before, c.Count()-1)
	}
}
