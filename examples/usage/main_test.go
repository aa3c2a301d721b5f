package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
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
