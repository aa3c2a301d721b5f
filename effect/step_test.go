package effect_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/modeltest"
)

// ticketCall is a model's answer asking to open a ticket with args.
func ticketCall(args string) modeltest.Outcome {
	return modeltest.Outcome{Response: &portico.Response{FinishReason: portico.FinishToolCalls,
		ToolCalls: []portico.ToolCall{{ID: "call_1", Name: "open_ticket", Arguments: json.RawMessage(args)}}}}
}

// TestFallbackReplayRunsStepOnce: an agent step asks a fallback group for a
// tool call and opens the ticket it names; the agent loses the step's
// answer (a crash, a timeout) and replays the step; the primary now fails,
// and the secondary writes the same call with other arguments. Keyed by the
// step (StepKey), the ticket is opened once and the replay gets the first
// ticket, told that the arguments differed; keyed by the arguments
// (KeyOf, the control), the same replay opens a second ticket, which is
// what 29 duplicate tickets in one outage run came from.
func TestFallbackReplayRunsStepOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     func(op string, call portico.ToolCall) (effect.Key, error)
		tickets int
	}{
		{"StepKey", func(op string, call portico.ToolCall) (effect.Key, error) {
			return effect.StepKey(op, "step-1", call.Name)
		}, 1},
		{"KeyOf", effect.KeyOf, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := modeltest.NewFake(ticketCall(`{"title":"Printer down","priority":"high"}`), modeltest.Fail(modeltest.StatusError(503)))
			secondary := modeltest.NewFake(ticketCall(`{"priority":"P1","title":"The printer is down"}`))
			g, err := fallback.New(fallback.Config{Routes: []portico.Route{
				{Name: "primary", Model: primary},
				{Name: "secondary", Model: secondary},
			}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := effect.New(effect.Config{})
			if err != nil {
				t.Fatal(err)
			}
			tickets := 0
			open := func(context.Context) (string, error) {
				tickets++
				return "TCK-" + string(rune('0'+tickets)), nil
			}
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "the printer is down")},
				Identity: portico.Identity{OperationID: "support-" + tc.name}}
			var got []string
			var errs []error
			for range 2 { // the step, then its replay
				resp, err := g.Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				call := resp.ToolCalls[0]
				key, err := tc.key(req.Identity.OperationID, call)
				if err != nil {
					t.Fatal(err)
				}
				id, err := effect.OnceArgs(context.Background(), r, key, call.Arguments, open)
				got, errs = append(got, id), append(errs, err)
			}
			if tickets != tc.tickets {
				t.Errorf("tickets opened = %d, want %d", tickets, tc.tickets)
			}
			if got[0] != "TCK-1" || errs[0] != nil {
				t.Errorf("the step = %q, %v; want TCK-1, nil", got[0], errs[0])
			}
			if tc.tickets == 1 {
				if got[1] != "TCK-1" || !errors.Is(errs[1], effect.ErrArgumentsDiffer) || portico.ClassOf(errs[1]) != portico.Permanent {
					t.Errorf("the replay = %q, %v; want TCK-1 with a permanent ErrArgumentsDiffer", got[1], errs[1])
				}
			} else if got[1] != "TCK-2" || errs[1] != nil {
				t.Errorf("the replay keyed by its arguments = %q, %v; want TCK-2 (another effect), nil", got[1], errs[1])
			}
			if primary.Count() != 2 || secondary.Count() != 1 {
				t.Errorf("calls: primary %d, secondary %d; want 2 (the answer, the 503) and 1", primary.Count(), secondary.Count())
			}
		})
	}
}
