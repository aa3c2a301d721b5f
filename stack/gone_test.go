package stack

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/ratelimit"
)

// TestGone: the preset, with one route and with two, with and without
// client limits, calls no route for a request whose caller has gone, and
// returns the context's error, NotSent.
func TestGone(t *testing.T) {
	caps := portico.Capabilities{Modalities: portico.ModalityText | portico.ModalityImage, Tools: true, Schema: portico.SchemaStrict, ModelClass: "small"}
	for name, c := range map[string]struct {
		routes int
		client *ratelimit.Config
	}{
		"one route":                  {1, nil},
		"two routes":                 {2, nil},
		"two routes, client limited": {2, &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10}}},
	} {
		t.Run(name, func(t *testing.T) {
			modeltest.RunGone(t, func(t *testing.T, base portico.Model) portico.Model {
				var routes []Route
				for _, n := range []string{"a", "b"}[:c.routes] {
					r := route(n, base)
					r.Capabilities = caps
					r.Limiter = &ratelimit.Config{Limits: ratelimit.Limits{Requests: 10}}
					routes = append(routes, r)
				}
				s, err := New(Config{Routes: routes, Client: c.client, Deadline: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

// TestGoneSpendsNoClientRequest: a tenant allowed one request an hour that
// sends one whose context is already canceled still has its request.
// Before, the client limiter admitted it and kept the request.
func TestGoneSpendsNoClientRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := modeltest.NewFake(modeltest.Answer("hi"))
		s, err := New(Config{Routes: []Route{route("a", f)}, Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 1, Period: time.Hour}}})
		if err != nil {
			t.Fatal(err)
		}
		dead, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Generate(dead, hello); !errors.Is(err, context.Canceled) {
			t.Fatalf("Generate(canceled) = %v, want context.Canceled", err)
		}
		if resp, err := s.Generate(t.Context(), hello); err != nil || f.Count() != 1 {
			t.Errorf("next live request = %v, %v (%d calls); want the hour's one request answered", resp, err, f.Count())
		}
	})
}
