package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/redisstore/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goBlocks returns the README's ```go blocks.
func goBlocks(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(readme), "```go\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			t.Fatal("README.md: a ```go block is not closed")
		}
		blocks = append(blocks, part[:end])
	}
	return blocks
}

// contains reports whether one of blocks is exactly want.
func contains(blocks []string, want string) bool {
	for _, b := range blocks {
		if b == want {
			return true
		}
	}
	return false
}

// The README's usage listing is this program, from "package main" to the end,
// byte for byte: what compiles here is what users copy.
func TestREADMEShowsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	listing := s[strings.Index(s, "package main"):]
	if !contains(goBlocks(t), listing) {
		t.Errorf("README.md does not show examples/usage/main.go from package main to the end as it is; copy it again")
	}
}

// The README's stack snippet is twoRoutes, from its func line to its closing
// brace, byte for byte.
func TestREADMEShowsTheStackSnippet(t *testing.T) {
	src, err := os.ReadFile("stack.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "func twoRoutes(")
	end := strings.Index(s[start:], "\n}\n") + start + 3
	if start < 0 || !contains(goBlocks(t), s[start:end]) {
		t.Errorf("README.md does not show examples/usage/stack.go's twoRoutes as it is; copy it again")
	}
}

// The README's Redis snippet is sharedRoutes, from its func line to its
// closing brace, byte for byte.
func TestREADMEShowsTheRedisSnippet(t *testing.T) {
	src, err := os.ReadFile("redis.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "func sharedRoutes(")
	end := strings.Index(s[start:], "\n}\n") + start + 3
	if start < 0 || !contains(goBlocks(t), s[start:end]) {
		t.Errorf("README.md does not show examples/usage/redis.go's sharedRoutes as it is; copy it again")
	}
}

// The Redis snippet's stacks share their state: a 429 with Retry-After
// that one instance's primary answers keeps the other instance's calls
// off that route, and both instances' limiters and budgets are in Redis.
func TestSharedRoutesShareACooldown(t *testing.T) {
	srv := redistest.Start(t)
	answer := modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop}}
	limited := modeltest.NewFake(modeltest.Outcome{Err: modeltest.RateLimitError(time.Minute)})
	unused, upA, upB := modeltest.NewFake(answer), modeltest.NewFake(answer), modeltest.NewFake(answer)
	a, stopA, err := sharedRoutes(srv.Client(t), limited, upA)
	if err != nil {
		t.Fatal(err)
	}
	defer stopA()
	b, stopB, err := sharedRoutes(srv.Client(t), unused, upB)
	if err != nil {
		t.Fatal(err)
	}
	defer stopB()
	req := &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "hi")},
		MaxOutputTokens: 16,
		Identity:        portico.Identity{ClientKey: "c"},
	}
	if resp, err := a.Generate(t.Context(), req); err != nil || resp.Route != "anthropic" || limited.Count() != 1 {
		t.Fatalf("instance a: Generate = %+v, %v, openai calls %d; want anthropic's answer after openai's 429", resp, err, limited.Count())
	}
	// b learns the cooldown within its refresh (100 ms) and a few round trips.
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := b.Generate(t.Context(), req)
		if err != nil {
			t.Fatalf("instance b: Generate = %v", err)
		}
		if resp.Route == "anthropic" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("instance b still calls openai 2 s after a's 429")
		}
	}
	before := unused.Count()
	if resp, err := b.Generate(t.Context(), req); err != nil || resp.Route != "anthropic" || unused.Count() != before {
		t.Errorf("instance b once it knows: Generate = %+v, %v, openai calls %d -> %d; want anthropic, openai not called", resp, err, before, unused.Count())
	}
	keys, err := srv.Client(t).Keys(t.Context(), "*").Result()
	if err != nil || len(keys) == 0 {
		t.Errorf("keys in Redis = %v, %v; want the shared limiters', budgets' and cooldowns'", keys, err)
	}
}

// The program runs against the in-process fake server when no key is set.
func TestRunsWithoutAKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	main()
}

// The stack of the snippet works: with the first route down, the second one
// answers.
func TestTwoRoutesFallsBack(t *testing.T) {
	down := modeltest.NewFake(modeltest.Outcome{Err: modeltest.StatusError(503)})
	up := modeltest.NewFake(modeltest.Outcome{Response: &portico.Response{Text: "ok", FinishReason: portico.FinishStop}})
	s, err := twoRoutes(down, up)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.Generate(context.Background(), &portico.Request{
		Messages:        []portico.Message{portico.Text(portico.RoleUser, "hi")},
		MaxOutputTokens: 16,
		Identity:        portico.Identity{ClientKey: "c"},
	})
	if err != nil || resp.Text != "ok" || resp.Route != "anthropic" {
		t.Fatalf("Generate = %+v, %v; want anthropic's ok", resp, err)
	}
	if down.Count() == 0 || up.Count() != 1 {
		t.Errorf("calls: openai %d, anthropic %d; want openai tried, anthropic once", down.Count(), up.Count())
	}
}
