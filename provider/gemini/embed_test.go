package gemini_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
	"github.com/portico-llm/portico/stack"
)

// TestEmbeddingsThroughThePreset: an embedding request through the preset
// reaches batchEmbedContents with its inputs and dimensions; a 503 on the
// first route moves it to the second route of the same space.
func TestEmbeddingsThroughThePreset(t *testing.T) {
	const model, space = "gemini-embedding-001", "gemini-embedding-001/16"
	route := func(name string, faults ...fakegemini.Fault) (stack.Route, *fakegemini.Server) {
		srv, err := fakegemini.Start(fakegemini.Config{Models: []fakegemini.ModelConfig{{Name: model, Faults: faults}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		m, err := gemini.New(context.Background(), gemini.Config{Model: model}, genai.ClientConfig{APIKey: "fake", HTTPClient: srv.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL()}})
		if err != nil {
			t.Fatal(err)
		}
		return stack.Route{Route: portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Provider: "gemini", Embedding: space}}}, srv
	}
	down, downSrv := route("a", fakegemini.Fault{Kind: fakegemini.FaultStatus, Status: 503, Fraction: 1})
	up, upSrv := route("b")
	st, err := stack.New(stack.Config{Routes: []stack.Route{down, up}})
	if err != nil {
		t.Fatal(err)
	}
	req := &portico.Request{Embedding: &portico.Embedding{Space: space, Dimensions: 16},
		Messages: []portico.Message{portico.Text(portico.RoleUser, "one"), portico.Text(portico.RoleUser, "two"), portico.Text(portico.RoleUser, "three")}}
	resp, err := st.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Route != "b" || len(resp.Embeddings) != 3 || len(resp.Embeddings[2]) != 16 || downSrv.Count(model) == 0 || upSrv.Count(model) != 1 {
		t.Fatalf("route %q, %d vectors; requests %d then %d", resp.Route, len(resp.Embeddings), downSrv.Count(model), upSrv.Count(model))
	}
}
