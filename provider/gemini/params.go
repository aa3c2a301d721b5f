package gemini

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/url"
	"path"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
	"google.golang.org/genai"
)

// params encodes req as the SDK's contents and config. Request.Extra keys the
// SDK has fields for go into those fields (see setExtra); other keys are
// merged into the request body's generationConfig through
// HTTPOptions.ExtraBody, except the top-level request fields listed in
// topLevel. The keys the adapter sets itself are refused.
func (m *Model) params(req *portico.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: &no}
	contents, system, err := messages(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	cfg.SystemInstruction = system
	if cfg.Tools, err = tools(req.Tools); err != nil {
		return nil, nil, err
	}
	if s := req.Schema; s != nil {
		if !json.Valid(s.JSON) {
			return nil, nil, errors.New("gemini: response schema is not valid JSON")
		}
		// responseJsonSchema takes the JSON Schema document as it is;
		// responseSchema would need a lossy translation to an OpenAPI 3.0
		// subset. Gemini has no strict flag: both modes are sent alike.
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = s.JSON
	}
	if n := req.MaxOutputTokens; n > math.MaxInt32 {
		return nil, nil, errors.New("gemini: MaxOutputTokens above 2^31-1")
	} else if n > 0 {
		cfg.MaxOutputTokens = int32(n)
	}
	if err := extras(cfg, req.Extra); err != nil {
		return nil, nil, err
	}
	return contents, cfg, thinking(cfg, req)
}

// tools declares the request's tools as functions, or nil without tools.
func tools(ts []portico.Tool) ([]*genai.Tool, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	decls := make([]*genai.FunctionDeclaration, 0, len(ts))
	for _, t := range ts {
		fd := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
		if len(t.Parameters) > 0 {
			if !json.Valid(t.Parameters) {
				return nil, fmt.Errorf("gemini: tool %q: parameters are not valid JSON", t.Name)
			}
			fd.ParametersJsonSchema = t.Parameters
		}
		decls = append(decls, fd)
	}
	return []*genai.Tool{{FunctionDeclarations: decls}}, nil
}

// extras sets the Extra keys setExtra knows in cfg, and the others in the
// body: a top-level request field as it is, any other in generationConfig.
func extras(cfg *genai.GenerateContentConfig, keys map[string]any) error {
	var extra map[string]any
	for k, v := range keys {
		if adapterKeys[k] {
			return fmt.Errorf("gemini: Extra key %q is the adapter's to set", k)
		}
		ok, err := setExtra(cfg, k, v)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if extra == nil {
			extra = map[string]any{}
		}
		gc, _ := extra["generationConfig"].(map[string]any)
		switch {
		case topLevel[k]:
			extra[k] = v
		case gc == nil:
			extra["generationConfig"] = map[string]any{k: v}
		default:
			gc[k] = v
		}
	}
	if extra == nil {
		return nil
	}
	// The SDK marshals ExtraBody only when it builds the request; a value
	// JSON cannot encode is this request's fault, told here, so that what
	// the SDK still refuses to build is the client's (Unusable).
	if _, err := json.Marshal(extra); err != nil {
		return fmt.Errorf("gemini: Extra not encodable: %w", err)
	}
	cfg.HTTPOptions = &genai.HTTPOptions{ExtraBody: extra}
	return nil
}

// adapterKeys are the body keys the adapter sets, refused in Extra.
var adapterKeys = map[string]bool{"model": true, "contents": true, "systemInstruction": true, "system_instruction": true,
	"tools": true, "generationConfig": true, "generation_config": true, "responseSchema": true, "responseJsonSchema": true,
	"responseMimeType": true, "maxOutputTokens": true}

var no = false

// topLevel lists the Extra keys that are fields of the GenerateContentRequest
// itself rather than of its generationConfig
// (https://ai.google.dev/api/generate-content#request-body).
var topLevel = map[string]bool{"safetySettings": true, "toolConfig": true, "cachedContent": true, "labels": true, "serviceTier": true}

// messages encodes the conversation: RoleSystem messages, wherever they are,
// become the system instruction's parts in order; user messages are "user"
// contents, assistant messages "model" contents (text, then function calls),
// and each run of RoleTool messages one "user" content of function
// responses, tied to the calls they answer by id and name.
func messages(msgs []portico.Message) ([]*genai.Content, *genai.Content, error) {
	var system *genai.Content
	contents := make([]*genai.Content, 0, len(msgs))
	for i := range msgs {
		msg := &msgs[i]
		var c *genai.Content
		var err error
		switch msg.Role {
		case portico.RoleSystem:
			system, err = systemParts(system, msg.Content)
		case portico.RoleUser:
			c, err = userContent(msg.Content)
		case portico.RoleAssistant:
			c, err = modelContent(msg)
		case portico.RoleTool:
			var part *genai.Part
			part, err = functionResponse(msgs[:i], msg)
			if n := len(contents); err == nil && n > 0 && i > 0 && msgs[i-1].Role == portico.RoleTool {
				contents[n-1].Parts = append(contents[n-1].Parts, part)
				continue
			}
			c = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}}
		default:
			err = fmt.Errorf("unknown role %q", msg.Role)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("gemini: message %d: %w", i, err)
		}
		if c != nil {
			contents = append(contents, c)
		}
	}
	return contents, system, nil
}

// userContent encodes a user message's parts.
func userContent(parts []portico.Part) (*genai.Content, error) {
	c := &genai.Content{Role: genai.RoleUser, Parts: make([]*genai.Part, len(parts))}
	for j, p := range parts {
		var err error
		if c.Parts[j], err = userPart(p); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// systemParts adds a system message's text parts to the system instruction.
func systemParts(system *genai.Content, parts []portico.Part) (*genai.Content, error) {
	if system == nil {
		system = &genai.Content{}
	}
	for _, p := range parts {
		if p.Kind != portico.PartText {
			return nil, fmt.Errorf("%v part in a system message", p.Kind)
		}
		system.Parts = append(system.Parts, &genai.Part{Text: p.Text})
	}
	return system, nil
}

// modelContent encodes an assistant message: its signed thoughts, its
// text (the last text part with its signature), then its function calls
// with the IDs and thought signatures they came with (from its Thoughts,
// or from a ToolCall.ID that carries one, as this adapter made them
// before Thoughts).
func modelContent(msg *portico.Message) (*genai.Content, error) {
	thoughts, textSig, callSigs := thoughtParts(msg)
	c := &genai.Content{Role: genai.RoleModel, Parts: make([]*genai.Part, 0, len(thoughts)+len(msg.Content)+len(msg.ToolCalls))}
	c.Parts = append(c.Parts, thoughts...)
	for _, p := range msg.Content {
		if p.Kind != portico.PartText {
			return nil, fmt.Errorf("%v part in an assistant message", p.Kind)
		}
		c.Parts = append(c.Parts, &genai.Part{Text: p.Text})
	}
	if n := len(c.Parts); textSig != nil && n > len(thoughts) {
		c.Parts[n-1].ThoughtSignature = textSig
	}
	for _, tc := range msg.ToolCalls {
		args, err := callArgs(tc.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: %w", tc.Name, err)
		}
		id, sig := decodeCallID(tc.ID)
		if s, ok := callSigs[tc.ID]; ok && sig == nil {
			sig = s
		}
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: tc.Name, Args: args}, ThoughtSignature: sig})
	}
	return c, nil
}

// functionResponse encodes a tool message as the response to the call of
// earlier it answers.
func functionResponse(earlier []portico.Message, msg *portico.Message) (*genai.Part, error) {
	name := callName(earlier, msg.ToolCallID)
	if name == "" {
		return nil, fmt.Errorf("tool result for %q answers no earlier tool call", msg.ToolCallID)
	}
	text, err := adapt.TextOnly(msg.Content)
	if err != nil {
		return nil, err
	}
	id, _ := decodeCallID(msg.ToolCallID)
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: toolOutput(text)}}, nil
}

// callName returns the name of the latest tool call in earlier whose ID is id.
func callName(earlier []portico.Message, id string) string {
	for i := len(earlier) - 1; i >= 0; i-- {
		for _, tc := range earlier[i].ToolCalls {
			if tc.ID == id {
				return tc.Name
			}
		}
	}
	return ""
}

// callArgs decodes a tool call's arguments, a JSON object; empty means none.
func callArgs(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, errors.New("arguments are not a JSON object")
	}
	return args, nil
}

// toolOutput is a tool result as Gemini's FunctionResponse.response: a JSON
// object as it is, anything else as {"output": text}, the key Gemini's
// documentation names for a function's output.
func toolOutput(text string) map[string]any {
	var obj map[string]any
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Unmarshal([]byte(t), &obj) == nil && obj != nil {
		return obj
	}
	return map[string]any{"output": text}
}

// userPart encodes one part of a user message: text, or an image as inline
// data (a data: URL) or as file data (any other URL: a Files API or gs://
// URI, or an https: URL where the backend accepts one).
func userPart(p portico.Part) (*genai.Part, error) {
	switch p.Kind {
	case portico.PartText:
		return &genai.Part{Text: p.Text}, nil
	case portico.PartImage:
		if strings.HasPrefix(p.ImageURL, "data:") {
			mt, data, err := parseDataURL(p.ImageURL)
			if err != nil {
				return nil, err
			}
			return &genai.Part{InlineData: &genai.Blob{MIMEType: mt, Data: data}}, nil
		}
		u, err := url.Parse(p.ImageURL)
		if err != nil || u.Scheme == "" {
			return nil, errors.New("image URL is neither a data: URL nor an absolute URI")
		}
		return &genai.Part{FileData: &genai.FileData{FileURI: p.ImageURL, MIMEType: mime.TypeByExtension(path.Ext(u.Path))}}, nil
	case portico.PartDocument, portico.PartAudio:
		return mediaPart(p.Media)
	}
	return nil, fmt.Errorf("unknown part kind %v", p.Kind)
}

// mediaPart encodes a document or audio part: its data inline (inlineData,
// base64 on the wire), a URL or a file id as fileData's fileUri
// (https://ai.google.dev/gemini-api/docs/document-processing and
// .../audio: PDF, plain text and audio by inline data or a Files API URI).
func mediaPart(m *portico.Media) (*genai.Part, error) {
	switch {
	case m == nil:
		return nil, errors.New("document or audio part without Media")
	case len(m.Data) > 0:
		return &genai.Part{InlineData: &genai.Blob{MIMEType: m.Type, Data: m.Data}}, nil
	}
	return &genai.Part{FileData: &genai.FileData{FileURI: cmp.Or(m.FileID, m.URL), MIMEType: m.Type}}, nil
}

// parseDataURL decodes an RFC 2397 data: URL with a media type, base64 or
// percent-encoded.
func parseDataURL(s string) (mediaType string, data []byte, err error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok {
		return "", nil, errors.New("data: URL without a comma")
	}
	meta, b64 := strings.CutSuffix(meta, ";base64")
	mediaType, _, _ = strings.Cut(meta, ";")
	if mediaType == "" {
		return "", nil, errors.New("data: URL without a media type")
	}
	if b64 {
		data, err = base64.StdEncoding.DecodeString(payload)
		if err != nil {
			data, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "="))
		}
		if err != nil {
			return "", nil, errors.New("data: URL payload is not base64")
		}
		return mediaType, data, nil
	}
	text, err := url.PathUnescape(payload)
	if err != nil {
		return "", nil, errors.New("data: URL payload is not percent-encoded")
	}
	return mediaType, []byte(text), nil
}
