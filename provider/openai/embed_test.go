package openai_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3/option"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/stack"
)

const small = "text-embedding-3-small"

// embedRoute is a route over a fake OpenAI server of one embedding model,
// declaring space.
func embedRoute(t *testing.T, name, space string, faults ...fakeopenai.Fault) (stack.Route, *fakeopenai.Server) {
	t.Helper()
	srv, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: small, Faults: faults}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	m := openai.New(openai.Config{Model: small}, option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(srv.Client()))
	return stack.Route{Route: portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: "openai", Embedding: space}}}, srv
}

func embedRequest(space string, inputs ...string) *portico.Request {
	req := &portico.Request{Embedding: &portico.Embedding{Space: space, Dimensions: 8}, Identity: portico.Identity{ClientKey: "tenant-1"}}
	for _, in := range inputs {
		req.Messages = append(req.Messages, portico.Text(portico.RoleUser, in))
	}
	return req
}

// TestEmbeddingsThroughThePreset: an embedding request goes through the
// preset's limiter (which reserves no output: a chat request without
// MaxOutputTokens is refused by the same limiter), falls back from a
// failing route to another of the same space, and never reaches a route
// of another space, placed first.
func TestEmbeddingsThroughThePreset(t *testing.T) {
	const space = small + "/8"
	other, otherSrv := embedRoute(t, "other-space", "text-embedding-3-large/8")
	down, downSrv := embedRoute(t, "a", space, fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1})
	up, upSrv := embedRoute(t, "b", space)
	st, err := stack.New(stack.Config{
		Routes: []stack.Route{other, down, up},
		Client: &ratelimit.Config{Limits: ratelimit.Limits{Requests: 100, Tokens: 1000}, DefaultMaxTokens: ratelimit.RequireMaxTokens},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := st.Generate(context.Background(), embedRequest(space, "first input", "second"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Route != "b" || len(resp.Embeddings) != 2 || len(resp.Embeddings[0]) != 8 || len(resp.Embeddings[1]) != 8 || resp.Usage.InputTokens != 5 {
		t.Fatalf("route %q, %d vectors, usage %+v", resp.Route, len(resp.Embeddings), resp.Usage)
	}
	if otherSrv.Count(small) != 0 || downSrv.Count(small) == 0 || upSrv.Count(small) != 1 {
		t.Fatalf("requests: other space %d, failing %d, answering %d", otherSrv.Count(small), downSrv.Count(small), upSrv.Count(small))
	}

	_, err = st.Generate(context.Background(), embedRequest("nobody's/8", "x"))
	if portico.ClassOf(err) != portico.Incompatible {
		t.Fatalf("a space no route has: %v (class %v), want incompatible", err, portico.ClassOf(err))
	}
	_, err = st.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "chat")}, MaxOutputTokens: 10})
	if portico.ClassOf(err) != portico.Incompatible {
		t.Fatalf("a chat request to embedding routes: %v (class %v), want incompatible", err, portico.ClassOf(err))
	}
}

// TestEmbeddingRequestShape: an embedding request with a tool, or without a
// space, is Permanent before anything is sent.
func TestEmbeddingRequestShape(t *testing.T) {
	r, srv := embedRoute(t, "a", small+"/8")
	for _, req := range []*portico.Request{
		embedRequest(""),
		func() *portico.Request {
			q := embedRequest(small+"/8", "x")
			q.Tools = []portico.Tool{{Name: "t"}}
			return q
		}(),
	} {
		if _, err := r.Model.Generate(context.Background(), req); portico.ClassOf(err) != portico.Permanent {
			t.Errorf("%+v: %v, want permanent", req.Embedding, err)
		}
	}
	if srv.Count(small) != 0 {
		t.Fatalf("%d requests sent", srv.Count(small))
	}
}

// TestEmbeddingSpacesNeverMix: with every route of one context window (so
// that a group may skip Fits on a route covering one that fit), a failing
// route of the request's space is not followed by a route of another space,
// under the plain preset and a weighted split; a chat request is never sent
// to an embedding route.
func TestEmbeddingSpacesNeverMix(t *testing.T) {
	const space = small + "/8"
	window := func(r stack.Route) stack.Route { r.Capabilities.ContextWindow = 128_000; return r }
	for _, kind := range []stack.Kind{nil, stack.Weighted{1, 1}} {
		down, downSrv := embedRoute(t, "a", space, fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1})
		other, otherSrv := embedRoute(t, "b", "text-embedding-3-large/8")
		st, err := stack.New(stack.Config{Routes: []stack.Route{window(down), window(other)}, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			resp, err := st.Generate(context.Background(), embedRequest(space, "x"))
			if err == nil {
				t.Fatalf("kind %T: answered by %q, of another space", kind, resp.Route)
			}
		}
		if otherSrv.Count(small) != 0 || downSrv.Count(small) == 0 {
			t.Fatalf("kind %T: requests to the other space %d, to the failing route %d", kind, otherSrv.Count(small), downSrv.Count(small))
		}
	}
	chat, err := fakeopenai.Start(fakeopenai.Config{Models: []fakeopenai.ModelConfig{{Name: small, Faults: []fakeopenai.Fault{{Kind: fakeopenai.FaultStatus, Status: 503, Fraction: 1}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chat.Close)
	chatRoute := stack.Route{Route: portico.Route{Name: "chat", Capabilities: portico.Capabilities{Provider: "openai", ContextWindow: 128_000},
		Model: openai.New(openai.Config{Model: small}, option.WithBaseURL(chat.BaseURL()), option.WithAPIKey("fake"), option.WithHTTPClient(chat.Client()))}}
	emb, embSrv := embedRoute(t, "emb", space)
	st, err := stack.New(stack.Config{Routes: []stack.Route{chatRoute, window(emb)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hi")}, MaxOutputTokens: 10}); err == nil || embSrv.Count(small) != 0 {
		t.Fatalf("a chat request: err %v, %d requests to the embedding route", err, embSrv.Count(small))
	}
}
