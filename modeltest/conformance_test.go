package modeltest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

func TestRunFake(t *testing.T) {
	Run(t, func(t *testing.T, base portico.Model) portico.Model { return base })
}

func TestRunFaultsPassingThrough(t *testing.T) {
	Run(t, func(t *testing.T, base portico.Model) portico.Model {
		return MustFaults(FaultConfig{Seed: 1}).Wrap(base)
	})
}

// A layer that checks portico.Gone first keeps RunGone's rule.
func TestRunGoneChecking(t *testing.T) {
	RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if err := portico.Gone(ctx); err != nil {
				return nil, err
			}
			return base.Generate(ctx, req)
		})
	})
}

func TestRunModelFake(t *testing.T) {
	RunModel(t, func(t *testing.T) portico.Model { return NewFake(Answer("hello there")) })
}

// The bad middlewares below each break one rule of the Model contract; the suite
// must fail on each. They run in a child process (see TestRunCatches), since a
// failing subtest would fail this test binary.
var badMiddlewares = map[string]portico.Middleware{
	"mutates": func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			req.Extra["nested"].(map[string]any)["k"] = "changed"
			return next.Generate(ctx, req)
		})
	},
	"ignores-cancel": func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			return next.Generate(context.WithoutCancel(ctx), req)
		})
	},
	"both": func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			resp, err := next.Generate(ctx, req)
			if err != nil {
				return &portico.Response{}, err
			}
			return resp, nil
		})
	},
	"drops-chunks": func(next portico.Model) portico.Model {
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			r := req.Clone()
			r.OnChunk = nil
			return next.Generate(ctx, r)
		})
	},
	"crosstalk": func(next portico.Model) portico.Model {
		var last *portico.Request
		return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
			if last != nil && req.Messages[len(req.Messages)-1].Content[0].Text[0] == 'g' {
				req = last // a racy cache that answers someone else's request
			}
			last = req
			return next.Generate(ctx, req)
		})
	},
}

// TestBadMiddleware is the child side of TestRunCatches.
func TestBadMiddleware(t *testing.T) {
	name := os.Getenv("MODELTEST_BAD")
	if name == "" {
		t.Skip("run by TestRunCatches")
	}
	if name == "passes-gone-down" { // RunGone's rule, which pass-through middlewares need not keep
		RunGone(t, func(t *testing.T, base portico.Model) portico.Model { return base })
		return
	}
	Run(t, func(t *testing.T, base portico.Model) portico.Model { return badMiddlewares[name](base) })
}

// TestRunCatches runs the suite over each bad middleware in a child process and
// checks that the expected subtest fails.
func TestRunCatches(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child test processes")
	}
	for name, subtest := range map[string]string{
		"mutates":          "NoMutation",
		"ignores-cancel":   "Cancel",
		"both":             "Error",
		"drops-chunks":     "Stream",
		"crosstalk":        "Concurrent",
		"passes-gone-down": "Canceled",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBadMiddleware$", "-test.v")
			cmd.Env = append(os.Environ(), "MODELTEST_BAD="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("Run over the %q middleware passed, want it to fail", name)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBadMiddleware/"+subtest) {
				t.Errorf("Run over %q: subtest %s did not fail; output:\n%s", name, subtest, out)
			}
		})
	}
}
