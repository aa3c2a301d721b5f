package openai

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// params encodes req for the Responses API: its messages as input items
// (a system message a system input message, a user message with its text
// and images, an assistant message its text then a function_call item per
// tool call, a tool message a function_call_output item), its tools as
// function tools (strict: false: Portico's tool schemas are not held to
// OpenAI's strict subset), its Schema as text.format json_schema, its
// MaxOutputTokens as max_output_tokens, a session's cache breakpoints as
// prompt_cache_key, and store as the Config says.
// Request.Extra keys are set on the JSON body as they are; model, input
// and stream are refused: the adapter sets them.
func (r *Responses) params(req *portico.Request, model string) (responses.ResponseNewParams, []option.RequestOption, error) {
	p := responses.ResponseNewParams{Model: shared.ResponsesModel(model)}
	if err := r.paramsInput(&p, req); err != nil {
		return p, nil, err
	}
	if err := paramsTools(&p, req.Tools); err != nil {
		return p, nil, err
	}
	if err := paramsSchema(&p, req.Schema); err != nil {
		return p, nil, err
	}
	if n := req.MaxOutputTokens; n > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(n))
	}
	if key := req.Identity.CacheKey(); key != "" && req.CacheBreakpoints() > 0 {
		p.PromptCacheKey = param.NewOpt(key) // as Model does: see the package doc, "Prompt caching"
	}
	r.paramsReasoning(&p, req)
	opts, err := extras(req.Extra, responsesKeys, nil)
	if err != nil {
		return p, nil, err
	}
	return p, opts, nil
}

// paramsInput sets p's input items from req's messages, after the newest
// stored response (as p's previous_response_id) when Config.Store is on.
func (r *Responses) paramsInput(p *responses.ResponseNewParams, req *portico.Request) error {
	from := 0
	if r.cfg.Store {
		if id, k := r.stored(req.Messages); k >= 0 {
			p.PreviousResponseID, from = param.NewOpt(id), k+1
		}
	}
	items := make(responses.ResponseInputParam, 0, len(req.Messages)-from)
	for i := from; i < len(req.Messages); i++ {
		var err error
		if items, err = r.inputItems(items, &req.Messages[i]); err != nil {
			return fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	p.Input.OfInputItemList = items
	return nil
}

// paramsTools sets p's tools from tools as non-strict function tools.
func paramsTools(p *responses.ResponseNewParams, tools []portico.Tool) error {
	for _, t := range tools {
		fn := responses.FunctionToolParam{Name: t.Name, Strict: param.NewOpt(false)}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &fn.Parameters); err != nil {
				return fmt.Errorf("openai: tool %q: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &fn})
	}
	return nil
}

// paramsSchema sets p's text.format to s as json_schema; a nil s sets
// nothing.
func paramsSchema(p *responses.ResponseNewParams, s *portico.Schema) error {
	if s == nil {
		return nil
	}
	var schema map[string]any
	if err := json.Unmarshal(s.JSON, &schema); err != nil {
		return errors.New("openai: response schema is not a JSON object")
	}
	p.Text.Format.OfJSONSchema = &responses.ResponseFormatTextJSONSchemaConfigParam{
		Name:   cmp.Or(s.Name, "response"),
		Schema: schema,
		Strict: param.NewOpt(s.Strict),
	}
	return nil
}

// paramsReasoning sets p's store, reasoning effort and summary, and asks
// for encrypted reasoning content when nothing is stored and reasoning is
// asked for or sent back.
func (r *Responses) paramsReasoning(p *responses.ResponseNewParams, req *portico.Request) {
	p.Store = param.NewOpt(r.cfg.Store)
	if rs := req.Reasoning; rs != nil {
		p.Reasoning.Effort = shared.ReasoningEffort(rs.Level())
		p.Reasoning.Summary = shared.ReasoningSummaryAuto
	}
	if !r.cfg.Store && (req.Reasoning != nil || r.ownThoughts(req.Messages)) {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
}

// inputItems appends the input items of one message to items.
func (r *Responses) inputItems(items responses.ResponseInputParam, msg *portico.Message) (responses.ResponseInputParam, error) {
	switch msg.Role {
	case portico.RoleUser:
		return userItem(items, msg)
	case portico.RoleSystem, portico.RoleAssistant, portico.RoleTool:
	default:
		return items, fmt.Errorf("unknown role %q", msg.Role)
	}
	text, err := adapt.TextOnly(msg.Content)
	switch {
	case err != nil:
		return items, err
	case msg.Role == portico.RoleSystem:
		return append(items, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleSystem)), nil
	case msg.Role == portico.RoleTool:
		out := responses.ResponseInputItemParamOfFunctionCallOutput(text)
		out.OfFunctionCallOutput.CallID = param.NewOpt(msg.ToolCallID)
		return append(items, out), nil
	}
	items = r.reasoningItems(items, msg.Thoughts)
	if text != "" || len(msg.ToolCalls) == 0 {
		items = append(items, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
	}
	for _, tc := range msg.ToolCalls {
		items = append(items, responses.ResponseInputItemParamOfFunctionCall(string(tc.Arguments), tc.ID, tc.Name))
	}
	return items, nil
}

// userItem appends a user message: its text alone as a string, else its
// text and image parts.
func userItem(items responses.ResponseInputParam, msg *portico.Message) (responses.ResponseInputParam, error) {
	if text, err := adapt.TextOnly(msg.Content); err == nil {
		return append(items, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)), nil
	}
	parts := make(responses.ResponseInputMessageContentListParam, 0, len(msg.Content))
	for _, part := range msg.Content {
		switch part.Kind {
		case portico.PartText:
			parts = append(parts, responses.ResponseInputContentParamOfInputText(part.Text))
		case portico.PartImage:
			img := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailAuto)
			img.OfInputImage.ImageURL = param.NewOpt(part.ImageURL)
			parts = append(parts, img)
		default:
			return items, fmt.Errorf("unknown part kind %v", part.Kind)
		}
	}
	return append(items, responses.ResponseInputItemParamOfMessage(parts, responses.EasyInputMessageRoleUser)), nil
}

// ResponsesDialect is the [portico.Thought].Dialect of the Thoughts a
// [Responses] model returns and alone sends back, when its
// ResponsesConfig.Account is empty. A reasoning item is a Thought of Kind
// "reasoning": ID the item's id, Text its summary (its parts joined by
// blank lines), Signature its encrypted content. With
// ResponsesConfig.Store, the answer's last Thought, of Kind "response",
// names the stored response by its ID.
const ResponsesDialect = "openai-responses"

// storedKind is the Thought.Kind of a stored response's id.
const storedKind = "response"

// stored returns the id of the stored response that the conversation
// msgs continues, named by the last Thought of Kind "response" of r's
// dialect, and the index of the assistant message that carries it; -1
// for none.
func (r *Responses) stored(msgs []portico.Message) (string, int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, t := range msgs[i].Thoughts {
			if t.Dialect == r.dialect && t.Kind == storedKind && t.ID != "" && msgs[i].Role == portico.RoleAssistant {
				return t.ID, i
			}
		}
	}
	return "", -1
}

// reasoningItems appends the reasoning items of an assistant message's
// Thoughts of r's dialect, in order, before the message's own items, as
// the model made them: each with its encrypted content, or by its id
// alone when OpenAI stored it; one with neither is left out, as are the
// Thoughts of other dialects (another provider's or account's blocks).
func (r *Responses) reasoningItems(items responses.ResponseInputParam, thoughts []portico.Thought) responses.ResponseInputParam {
	for _, t := range thoughts {
		if t.Dialect != r.dialect || t.Kind != "reasoning" || t.Signature == "" && (!r.cfg.Store || t.ID == "") {
			continue
		}
		it := responses.ResponseReasoningItemParam{ID: t.ID, Summary: []responses.ResponseReasoningItemSummaryParam{}}
		if t.Text != "" {
			it.Summary = append(it.Summary, responses.ResponseReasoningItemSummaryParam{Text: t.Text})
		}
		if t.Signature != "" {
			it.EncryptedContent = param.NewOpt(t.Signature)
		}
		items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &it})
	}
	return items
}

// ownThoughts reports whether an assistant message of msgs carries a
// Thought of r's dialect.
func (r *Responses) ownThoughts(msgs []portico.Message) bool {
	for i := range msgs {
		for _, t := range msgs[i].Thoughts {
			if t.Dialect == r.dialect {
				return true
			}
		}
	}
	return false
}
