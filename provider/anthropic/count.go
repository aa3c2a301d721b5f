package anthropic

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// countFields are the fields of a Messages request that
// /v1/messages/count_tokens takes; the others (max_tokens, sampling,
// metadata) it refuses.
var countFields = map[string]bool{"model": true, "messages": true, "system": true, "tools": true,
	"tool_choice": true, "thinking": true, "output_config": true}

// CountTokens returns the input tokens of req as Anthropic's
// /v1/messages/count_tokens endpoint counts them for the model Generate
// would call, req encoded as Generate encodes it (less the fields that
// endpoint does not take). It is a [portico.CountFunc]:
// portico.NewCounted(m.CountTokens, portico.Counting{}) is an Estimator
// of Anthropic's own counts, cached and bounded in time. Its error is the
// request's encoding error (Permanent, as Generate's) or the endpoint's,
// as the SDK returns it.
func (m *Model) CountTokens(ctx context.Context, req *portico.Request) (int, error) {
	model, err := adapt.ModelName(req, m.cfg.Model)
	if err != nil {
		return 0, err
	}
	files, err := media(req)
	if err != nil {
		return 0, err
	}
	params, err := m.params(req, model)
	if err != nil {
		return 0, err
	}
	body, err := countBody(params)
	if err != nil {
		return 0, &portico.Error{Class: portico.Permanent, Model: model, Reason: "request not encodable", Err: err}
	}
	opts := []option.RequestOption{option.WithRequestBody("application/json", body), noRetries}
	if files {
		opts = append(opts, option.WithHeaderAdd("anthropic-beta", filesBeta))
	}
	res, err := m.client.Messages.CountTokens(ctx, sdk.MessageCountTokensParams{}, opts...)
	if err != nil {
		return 0, fmt.Errorf("anthropic: count_tokens: %w", err)
	}
	return int(res.InputTokens), nil
}

// countBody is the JSON of p less the fields count_tokens does not take.
func countBody(p sdk.MessageNewParams) ([]byte, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k := range fields {
		if !countFields[k] {
			delete(fields, k)
		}
	}
	return json.Marshal(fields)
}
