package gemini

import (
	"context"
	"errors"
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// CountTokens returns the input tokens of req as Gemini's countTokens
// endpoint counts them for the model Generate would call, req encoded as
// Generate encodes it. On Vertex AI the system instruction and tools are
// counted with the contents; the Gemini Developer API's endpoint takes
// contents only (genai refuses the rest there), so the system instruction
// is counted as a first user turn and tools are left out. It is a
// [portico.CountFunc]: portico.NewCounted(m.CountTokens, portico.Counting{})
// is an Estimator of Gemini's own counts, cached and bounded in time. Its
// error is the request's encoding error (Permanent, as Generate's), one
// for an embedding request, or the endpoint's as genai returns it.
func (m *Model) CountTokens(ctx context.Context, req *portico.Request) (int, error) {
	model, err := adapt.ModelName(req, m.cfg.Model)
	if err != nil {
		return 0, err
	}
	if req.Embedding != nil {
		return 0, errors.New("gemini: countTokens: an embedding request")
	}
	contents, cfg, err := m.params(req)
	if err != nil {
		return 0, &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", Err: err}
	}
	cc := &genai.CountTokensConfig{}
	switch {
	case m.client.ClientConfig().Backend == genai.BackendVertexAI:
		cc.SystemInstruction, cc.Tools = cfg.SystemInstruction, cfg.Tools
	case cfg.SystemInstruction != nil:
		contents = append([]*genai.Content{{Role: genai.RoleUser, Parts: cfg.SystemInstruction.Parts}}, contents...)
	}
	r, err := m.client.Models.CountTokens(ctx, model, contents, cc)
	if err != nil {
		return 0, fmt.Errorf("gemini: countTokens: %w", err)
	}
	return int(r.TotalTokens), nil
}
