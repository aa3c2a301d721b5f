package stack

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/spend"
)

// TestPresetSteerWithoutMaxOutputTokens: through the preset, requests
// without MaxOutputTokens are priced at portico.DefaultMaxTokens by the
// spend budget and by the group alike (10.24 on the dear route, 1.024 on
// the cheap one): with a day budget of 11 and answers of 40 tokens (0.4
// on the dear route), the third request has 10.2 left, below the dear
// estimate, and Steer sends it to the cheap route.
func TestPresetSteerWithoutMaxOutputTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { presetSteerWithoutMaxOutputTokens(t) })
}

func presetSteerWithoutMaxOutputTokens(t *testing.T) {
	dear, cheap := route("dear", answersTokens()), route("cheap", answersTokens())
	dear.Capabilities = portico.Capabilities{OutputPrice: 0.01}
	cheap.Capabilities = portico.Capabilities{OutputPrice: 0.001}
	s, err := New(Config{Routes: []Route{dear, cheap},
		Spend: &spend.Config{Limits: []spend.Limit{{Window: spend.Day, Amount: 11}}, Steer: true}})
	if err != nil {
		t.Fatal(err)
	}
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, Identity: portico.Identity{ClientKey: "t"}}
	var routes []string
	for range 3 {
		resp, err := s.Generate(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, resp.Route)
	}
	if fmt.Sprint(routes) != "[dear dear cheap]" {
		t.Errorf("routes %v, want [dear dear cheap]", routes)
	}
}
