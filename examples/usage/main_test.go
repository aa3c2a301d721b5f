package main

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's usage snippet is this program's main, word for word, so that
// what users copy compiles.
func TestREADMEShowsThisProgram(t *testing.T) {
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	start := strings.Index(s, "func main() {")
	end := strings.Index(s[start:], "\n}\n") + start + 3
	if start < 0 || !strings.Contains(string(readme), s[start:end]) {
		t.Errorf("README.md does not show examples/usage's func main as it is; copy it again")
	}
}

// The program runs against the in-process fake server when no key is set.
func TestRunsWithoutAKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	main()
}
