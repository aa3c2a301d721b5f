package openai

import (
	"cmp"
	"context"
	"slices"

	oai "github.com/openai/openai-go/v3"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// embed serves an embedding request ([portico.Embedding]) with
// client.Embeddings: the inputs in one call, as the API counts them (its
// usage's prompt_tokens), the vectors as float32s in the inputs' order.
func (m *Model) embed(ctx context.Context, req *portico.Request, model string) (*portico.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	x := &adapt.Exchange{Limit: m.limit, TooLarge: ErrTooLarge}
	params := oai.EmbeddingNewParams{Model: model, EncodingFormat: oai.EmbeddingNewParamsEncodingFormatFloat,
		Input: oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: req.EmbeddingInputs()}}
	if d := req.Embedding.Dimensions; d > 0 {
		params.Dimensions = oai.Int(int64(d))
	}
	res, err := m.client.Embeddings.New(adapt.WithExchange(ctx, x), params, watched, noRetries)
	if err != nil {
		return nil, m.classify(ctx, err, x, model)
	}
	rl := ParseRateLimit(x.Header)
	if len(res.Data) != len(req.Messages) {
		return nil, malformed(x, model, "embeddings: one vector per input")
	}
	data := slices.Clone(res.Data)
	slices.SortFunc(data, func(a, b oai.Embedding) int { return int(a.Index - b.Index) })
	out := make([][]float32, len(data))
	for i, d := range data {
		if d.Index != int64(i) {
			return nil, malformed(x, model, "embeddings: indexes")
		}
		out[i] = make([]float32, len(d.Embedding))
		for j, f := range d.Embedding {
			out[i][j] = float32(f)
		}
	}
	return &portico.Response{Model: cmp.Or(res.Model, model), Embeddings: out, FinishReason: portico.FinishStop, RateLimit: rl,
		Usage: portico.Usage{InputTokens: int(res.Usage.PromptTokens)}}, nil
}
