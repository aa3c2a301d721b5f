package fakeopenai

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"sync"
)

// The Responses API (POST /v1/responses) is served by the same models,
// faults and answers as chat completions: a request is read in the
// Responses format, translated into the chat request it stands for (its
// instructions a system message, its input items messages, its function
// tools, tool_choice, text.format and max_output_tokens their chat forms),
// answered as that request would be, and the answer is written in the
// Responses format (responses_write.go). The formats are those of
// openai-go v3.99.0 (responses.ResponseNewParams, responses.Response,
// responses.ResponseStreamEventUnion) and of the API reference,
// https://platform.openai.com/docs/api-reference/responses and
// .../responses-streaming.

// responsesRequest is the part of a Responses API request the server
// reads (openai-go's responses.ResponseNewParams).
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Tools           []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Text              *struct {
		Format *struct {
			Type   string          `json:"type"`
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"format"`
	} `json:"text"`
	Reasoning *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Store              *bool    `json:"store"`
	Include            []string `json:"include"`
	PreviousResponseID *string  `json:"previous_response_id"`

	// raw keeps the fields echoed in the response object as sent.
	raw struct {
		Tools      json.RawMessage `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		Text       json.RawMessage `json:"text"`
	}
}

// inputItem is one item of a Responses request's input list: a message
// (its type "message" or omitted), a function_call, a
// function_call_output or a reasoning item.
type inputItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent *string         `json:"encrypted_content"`
}

// decodeResponses reads a Responses request body into the chatRequest
// that carries it; translate fills in the chat fields.
func decodeResponses(body []byte) (string, bool, *chatRequest, error) {
	rr := new(responsesRequest)
	if err := json.Unmarshal(body, rr); err != nil {
		return rr.Model, rr.Stream, nil, err
	}
	if err := json.Unmarshal(body, &rr.raw); err != nil {
		return rr.Model, rr.Stream, nil, err
	}
	return rr.Model, rr.Stream, &chatRequest{Model: rr.Model, Stream: rr.Stream, responses: rr}, nil
}

// storeLimit bounds the responses a Server keeps for previous_response_id:
// past it, responses are answered but not stored.
const storeLimit = DefaultRecordLimit

// store is what the Responses API keeps of answers made with store not
// false: each response's conversation (its input then its output, as chat
// messages) by response id, and the ids of the reasoning items it made.
type store struct {
	mu        sync.Mutex
	responses map[string][]chatMessage
	items     map[string]bool
}

func (st *store) conversation(id string) ([]chatMessage, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	msgs, ok := st.responses[id]
	return msgs, ok
}

func (st *store) hasItem(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.items[id]
}

func (st *store) put(id string, msgs []chatMessage, items []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.responses == nil {
		st.responses, st.items = map[string][]chatMessage{}, map[string]bool{}
	}
	if len(st.responses) >= storeLimit {
		return
	}
	st.responses[id] = msgs
	for _, it := range items {
		st.items[it] = true
	}
}

// translate fills in c.req's chat fields from its Responses request, or
// answers the request with OpenAI's 400 (an unknown previous_response_id,
// an input item of an unknown type, a reasoning item whose encrypted
// content this server did not issue or that store: false left unknown)
// and reports false.
func (s *Server) translate(c *call) bool {
	rr, req := c.req.responses, c.req
	if e := s.translateMessages(rr, req); e != nil {
		writeError(c.W, http.StatusBadRequest, "invalid_request_error", e.code, e.param, e.msg)
		return false
	}
	translateTools(rr, req)
	translateFormat(rr, req)
	return true
}

// badInput is the 400 translate answers: OpenAI's error code, the
// offending parameter and the message.
type badInput struct{ code, param, msg string }

// translateMessages appends to req.Messages the stored conversation of
// rr's previous_response_id, its instructions and its input items, or
// reports why the request is bad.
func (s *Server) translateMessages(rr *responsesRequest, req *chatRequest) *badInput {
	if id := rr.PreviousResponseID; id != nil {
		msgs, ok := s.stored.conversation(*id)
		if !ok {
			return &badInput{"previous_response_not_found", "previous_response_id", "Previous response with id '" + *id + "' not found."}
		}
		req.Messages = append(req.Messages, msgs...)
	}
	if rr.Instructions != nil {
		req.Messages = append(req.Messages, chatMessage{Role: "system", Content: jsonString(*rr.Instructions)})
	}
	var items []inputItem
	var text string
	switch {
	case json.Unmarshal(rr.Input, &text) == nil:
		items = []inputItem{{Type: "message", Role: "user", Content: jsonString(text)}}
	case json.Unmarshal(rr.Input, &items) != nil:
		return &badInput{"", "input", "Invalid type for 'input': expected a string or an array of input items."}
	}
	for i, it := range items {
		if e := s.translateItem(req, it, "input["+strconv.Itoa(i)+"]"); e != nil {
			return e
		}
	}
	return nil
}

// translateItem appends input item it (at param) to req.Messages as a
// chat message; a reasoning item adds none but must verify.
func (s *Server) translateItem(req *chatRequest, it inputItem, param string) *badInput {
	switch it.Type {
	case "", "message":
		role := it.Role
		if role == "developer" {
			role = "system"
		}
		req.Messages = append(req.Messages, chatMessage{Role: role, Content: jsonString(itemText(it.Content))})
	case "function_call":
		req.Messages = append(req.Messages, chatMessage{Role: "assistant", Content: jsonString(it.Name + " " + it.Arguments)})
	case "function_call_output":
		req.Messages = append(req.Messages, chatMessage{Role: "tool", Content: jsonString(itemText(it.Output))})
	case "reasoning":
		return s.verifyReasoning(it, param)
	default:
		return &badInput{"invalid_value", param + ".type", "Invalid value: '" + it.Type + "'. Supported values are: 'message', 'function_call', 'function_call_output' and 'reasoning'."}
	}
	return nil
}

// verifyReasoning reports a reasoning item whose encrypted content this
// server did not issue, or whose id without one it did not store.
func (s *Server) verifyReasoning(it inputItem, param string) *badInput {
	switch {
	case it.EncryptedContent != nil && !s.verify(it.ID, *it.EncryptedContent):
		return &badInput{"invalid_encrypted_content", param + ".encrypted_content", "The encrypted content for item " + it.ID + " could not be verified."}
	case it.EncryptedContent == nil && !s.stored.hasItem(it.ID):
		return &badInput{"", param, "Item with id '" + it.ID + "' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."}
	}
	return nil
}

// translateTools copies rr's function tools, tool choice and
// parallel_tool_calls into req's chat form.
func translateTools(rr *responsesRequest, req *chatRequest) {
	for _, t := range rr.Tools {
		if t.Type == "function" {
			var ct chatTool
			ct.Type, ct.Function.Name, ct.Function.Parameters = "function", t.Name, t.Parameters
			req.Tools = append(req.Tools, ct)
		}
	}
	req.ToolChoice = rr.ToolChoice
	var named struct{ Type, Name string }
	if json.Unmarshal(rr.ToolChoice, &named) == nil && named.Type == "function" {
		req.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	}
	req.ParallelToolCalls = rr.ParallelToolCalls
}

// translateFormat copies rr's non-text output format and
// max_output_tokens into req's chat form.
func translateFormat(rr *responsesRequest, req *chatRequest) {
	if rr.Text != nil && rr.Text.Format != nil && rr.Text.Format.Type != "text" {
		f := rr.Text.Format
		req.ResponseFormat = &responseFormat{Type: f.Type}
		req.ResponseFormat.JSONSchema.Name, req.ResponseFormat.JSONSchema.Schema, req.ResponseFormat.JSONSchema.Strict = f.Name, f.Schema, f.Strict
	}
	req.MaxCompletionTokens = rr.MaxOutputTokens
}

// itemText is the text of an input message's content or a function call's
// output: a string, or its input_text, output_text and text parts.
func itemText(raw json.RawMessage) string { return textOf(raw, "input_text", "output_text", "text") }

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// encryptedPrefix begins the encrypted content of the server's reasoning
// items (OpenAI's is an opaque base64 token; the fake's is its item id and
// a keyed hash, so that the server can tell its own from any other).
const encryptedPrefix = "fakeenc_"

// seal returns the encrypted content of the reasoning item id.
func (s *Server) seal(id string) string {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], s.core.Seed())
	h.Write(b[:])
	h.Write([]byte(id))
	return encryptedPrefix + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// verify reports whether enc is the encrypted content this server issued
// for the reasoning item id.
func (s *Server) verify(id, enc string) bool { return id != "" && enc == s.seal(id) }

// reasons reports whether the model reasons on this request: it asked for
// reasoning (an effort other than "none"), or the model thinks while it
// waits (ModelConfig.ThinkEvery).
func (c *call) reasons() bool {
	r := c.req.responses.Reasoning
	return r != nil && (r.Effort == nil || *r.Effort != "none") || c.m.cfg.ThinkEvery > 0
}

// summarized reports whether the request asked for reasoning summaries.
func (c *call) summarized() bool {
	r := c.req.responses.Reasoning
	return r != nil && r.Summary != nil && *r.Summary != ""
}

// encrypted reports whether the request asked for the encrypted content
// of its reasoning items.
func (c *call) encrypted() bool {
	return slices.Contains(c.req.responses.Include, "reasoning.encrypted_content")
}

// stores reports whether the response is stored: store is true unless
// the request sets it false.
func (c *call) stores() bool {
	s := c.req.responses.Store
	return s == nil || *s
}
