package gemini

import (
	"context"

	"google.golang.org/genai"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// embed serves an embedding request ([portico.Embedding]) with
// Models.EmbedContent (batchEmbedContents on the Gemini API): the inputs
// in one call, each a content of one text part, outputDimensionality from
// Dimensions. The API reports no usage for it: Usage counts the inputs
// with the default estimator.
func (m *Model) embed(ctx context.Context, req *portico.Request, model string, x *adapt.Exchange) (*portico.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	inputs := req.EmbeddingInputs()
	contents := make([]*genai.Content, len(inputs))
	for i, in := range inputs {
		contents[i] = genai.NewContentFromText(in, genai.RoleUser)
	}
	var cfg *genai.EmbedContentConfig
	if d := int32(req.Embedding.Dimensions); d > 0 {
		cfg = &genai.EmbedContentConfig{OutputDimensionality: &d}
	}
	r, err := m.client.Models.EmbedContent(adapt.WithExchange(ctx, x), model, contents, cfg)
	if err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	if len(r.Embeddings) != len(inputs) {
		return nil, x.Malformed(model, "embeddings: one vector per input", nil)
	}
	out := make([][]float32, len(r.Embeddings))
	for i, e := range r.Embeddings {
		if e == nil {
			return nil, x.Malformed(model, "embeddings: a null vector", nil)
		}
		out[i] = e.Values
	}
	return &portico.Response{Model: model, Embeddings: out, FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: portico.DefaultEstimator.EstimateInputTokens(req)}}, nil
}
