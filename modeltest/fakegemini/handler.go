package fakegemini

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// genRequest is the part of a GenerateContentRequest the server reads
// (https://ai.google.dev/api/generate-content#request-body).
type genRequest struct {
	model  string // from the path, without "models/"
	stream bool
	sse    bool          // alt=sse
	embed  *embedRequest // a batchEmbedContents request (embed.go), or nil
	count  bool          // a countTokens request

	Contents          []content `json:"contents"`
	SystemInstruction *content  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig struct {
		MaxOutputTokens    *int            `json:"maxOutputTokens"`
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ThinkingConfig     *thinkingConfig `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text       *string `json:"text,omitempty"`
	InlineData *struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData,omitempty"`
	FileData *struct {
		MIMEType string `json:"mimeType"`
		FileURI  string `json:"fileUri"`
	} `json:"fileData,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	FunctionCall     *functionCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// errNoRoute is Decode's error for a path Route let through but that names
// no model (it cannot happen: Route checks the same shape).
var errNoRoute = errors.New("fakegemini: no model in path")

// parsePath splits "/v1beta/models/gemini-2.5-flash:generateContent" (or a
// Vertex AI path ending in ".../publishers/google/models/M:method") into the
// model and the method; ok is false for any other path.
func parsePath(p string) (model, method string, ok bool) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", "", false
	}
	model, method, ok = strings.Cut(p[i+len("/models/"):], ":")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	return model, method, method == "generateContent" || method == "streamGenerateContent" || method == "batchEmbedContents" || method == "countTokens"
}

// dialect is the Gemini API's part of the server: routes, request decoding,
// error bodies and answers.
func (s *Server) dialect() fakecore.Dialect[*genRequest] {
	return fakecore.Dialect[*genRequest]{
		Name: "fakegemini",
		Route: func(w http.ResponseWriter, r *http.Request) bool {
			if _, _, ok := parsePath(r.URL.Path); !ok {
				writeError(w, http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.")
				return false
			}
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", http.MethodPost)
				writeError(w, http.StatusMethodNotAllowed, "Only POST is allowed.")
				return false
			}
			return true
		},
		Decode: func(r *http.Request, body []byte) (string, bool, *genRequest, error) {
			model, method, ok := parsePath(r.URL.Path)
			req := &genRequest{model: model, stream: method == "streamGenerateContent", sse: r.URL.Query().Get("alt") == "sse",
				count: method == "countTokens"}
			if !ok {
				return "", false, req, errNoRoute
			}
			if method == "batchEmbedContents" {
				req.embed = new(embedRequest)
				return model, false, req, json.Unmarshal(body, req.embed)
			}
			if err := json.Unmarshal(body, req); err != nil {
				return model, req.stream, req, err
			}
			return model, req.stream, req, nil
		},
		BadRequest: func(c *fakecore.Call, err error) {
			writeError(c.W, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		},
		UnknownModel: func(c *fakecore.Call) {
			writeError(c.W, http.StatusNotFound, "models/"+c.Model+" is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.")
		},
		Serve: func(fc *fakecore.Call, req *genRequest) {
			c := &call{Call: fc, s: s, m: s.models[fc.Model], req: req}
			switch {
			case req.embed != nil:
				c.embed()
			case req.count:
				c.countTokens()
			default:
				c.run()
			}
		},
	}
}

// call is one request being answered.
type call struct {
	*fakecore.Call
	s   *Server
	m   *ModelConfig
	req *genRequest

	inputTokens int
}

func (c *call) run() {
	if msg, reason := c.refusal(); msg != "" {
		c.reply(http.StatusBadRequest, "", msg, reason)
		return
	}
	c.inputTokens = c.countInput()
	switch {
	case c.serveFault():
	case c.m.ContextWindow > 0 && c.inputTokens > c.m.ContextWindow:
		c.contextLength()
	case c.m.BlockReason != "":
		c.blocked()
	case c.req.stream:
		c.streamAnswer(c.answer())
	default:
		c.whole(c.answer())
	}
}

// refusal returns the message and reason of the 400 the API answers a
// request it refuses with, or "".
func (c *call) refusal() (msg, reason string) {
	if key := c.s.cfg.APIKey; key != "" && c.R.Header.Get("x-goog-api-key") != key && c.R.URL.Query().Get("key") != key {
		return "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"
	}
	if c.req.stream && !c.req.sse {
		return "fakegemini serves streamGenerateContent with alt=sse only.", ""
	}
	return c.validate(), ""
}

// countTokens answers countTokens: the prompt tokens a generateContent
// call of the same contents reports (countInput), or its refusal.
func (c *call) countTokens() {
	if msg, reason := c.refusal(); msg != "" {
		c.reply(http.StatusBadRequest, "", msg, reason)
		return
	}
	c.W.Header().Set("Content-Type", "application/json; charset=UTF-8")
	c.W.WriteHeader(http.StatusOK)
	fmt.Fprintf(c.W, `{"totalTokens":%d}`, c.countInput())
}

// serveFault serves the faults that end the call before an answer, and
// reports whether it served one.
func (c *call) serveFault() bool {
	f := c.Fault
	if f.Kind == FaultStatus {
		c.Fault.RetryAfter = 0 // in the body, not a header
	}
	switch {
	case c.ServeFault(func(status int) []byte { return errorJSON(status, f.Code, f.Message, f.Type, f.RetryAfter) }):
	case f.Kind == FaultContextLength:
		c.contextLength()
	case f.Kind == FaultStreamError && !c.req.stream:
		rpc := c.streamStatus()
		c.reply(rpcCode(rpc), rpc, "", "")
	default:
		return false
	}
	return true
}

// validate checks what the Gemini API refuses with 400 INVALID_ARGUMENT and
// returns its message, or "".
func (c *call) validate() string {
	if len(c.req.Contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	for i, ct := range c.req.Contents {
		for j := range ct.Parts {
			if why := c.partRefusal(ct.Parts, i, j); why != "" {
				return why
			}
		}
	}
	return ""
}

// partRefusal returns the API's message for part j of content i, whose
// parts are parts, or "": inline data that is not base64, a function
// response without a name, and a function call without the thought
// signature the model requires or with one it did not make.
func (c *call) partRefusal(parts []part, i, j int) string {
	p := parts[j]
	at := "contents[" + strconv.Itoa(i) + "].parts[" + strconv.Itoa(j) + "]"
	switch {
	case p.InlineData != nil:
		if _, err := base64.StdEncoding.DecodeString(p.InlineData.Data); err != nil {
			return "Invalid value at '" + at + ".inline_data.data' (TYPE_BYTES), Base64 decoding failed"
		}
	case p.FunctionResponse != nil && p.FunctionResponse.Name == "":
		return "* GenerateContentRequest." + at + ".function_response.name: Name cannot be empty."
	case p.FunctionCall != nil && c.m.ThoughtSignatures && j == firstCall(parts) && p.ThoughtSignature == "":
		return "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly. Additional data, function call `" + p.FunctionCall.Name + "` , position " + strconv.Itoa(i+1) + "."
	case p.FunctionCall != nil && p.ThoughtSignature != "" && p.ThoughtSignature != callSignature(c.req.model, p.FunctionCall) && !skipsValidator(p.ThoughtSignature):
		return "Corrupted thought signature."
	}
	return ""
}

// firstCall is the index of the first function call part, or -1.
func firstCall(parts []part) int {
	for i, p := range parts {
		if p.FunctionCall != nil {
			return i
		}
	}
	return -1
}

func (c *call) contextLength() {
	limit := c.m.ContextWindow
	if limit <= 0 {
		limit = 1048576
	}
	c.reply(http.StatusBadRequest, "", "The input token count ("+strconv.Itoa(c.inputTokens)+") exceeds the maximum number of tokens allowed ("+strconv.Itoa(limit)+").", "")
}

// streamStatus is FaultStreamError's google.rpc.Code name.
func (c *call) streamStatus() string { return cmp.Or(c.Fault.Code, "UNAVAILABLE") }

// reply writes Google's error object for status with the fault's message
// when it has one.
func (c *call) reply(status int, rpc, msg, reason string) {
	c.Fault.RetryAfter = 0
	c.Reply(status, errorJSON(status, rpc, cmp.Or(c.Fault.Message, msg), reason, 0))
}

// rpcNames maps HTTP statuses to the google.rpc.Code names Google's APIs
// send with them (https://cloud.google.com/apis/design/errors#handling_errors).
var rpcNames = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL",
	501: "NOT_IMPLEMENTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}

// messages are the messages Google sends with each status
// (https://ai.google.dev/gemini-api/docs/troubleshooting).
var messages = map[int]string{
	400: "Request contains an invalid argument.",
	401: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
	403: "The caller does not have permission",
	404: "Requested entity was not found.",
	429: "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
	500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
	503: "The model is overloaded. Please try again later.",
	504: "Deadline expired before operation could complete.",
}

// rpcCode is the HTTP status of a google.rpc.Code name, 500 when unknown.
func rpcCode(rpc string) int {
	for code, name := range rpcNames {
		if name == rpc {
			return code
		}
	}
	return http.StatusInternalServerError
}

// errorJSON is Google's error object: {"error":{"code","message","status",
// "details"}}. rpc and msg default to the status's usual ones; a reason adds
// an ErrorInfo detail; a 429 carries a QuotaFailure, a Help link and, with a
// positive retry, a RetryInfo detail.
func errorJSON(status int, rpc, msg, reason string, retry time.Duration) []byte {
	if rpc == "" {
		rpc = rpcNames[status]
		if rpc == "" && status >= 500 {
			rpc = "INTERNAL"
		} else if rpc == "" {
			rpc = "INVALID_ARGUMENT"
		}
	}
	msg = cmp.Or(msg, messages[status])
	var details []map[string]any
	if reason != "" {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
			"domain": "googleapis.com", "metadata": map[string]string{"service": "generativelanguage.googleapis.com"}})
	}
	if status == http.StatusTooManyRequests {
		details = append(details,
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []map[string]any{{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "10"}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []map[string]string{{
				"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}}})
	}
	if retry > 0 {
		details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": FormatRetryDelay(retry)})
	}
	type rpcStatus struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Status  string           `json:"status"`
		Details []map[string]any `json:"details,omitempty"`
	}
	b, _ := json.Marshal(map[string]rpcStatus{"error": {Code: status, Message: msg, Status: rpc, Details: details}})
	return b
}

// writeError writes Google's error object without a fault (routing errors).
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write(errorJSON(status, "", msg, "", 0))
}

// FormatRetryDelay formats d as Google sends a google.rpc.RetryInfo's
// retryDelay, a google.protobuf.Duration in JSON: whole seconds ("37s"), or
// with 3, 6 or 9 fractional digits ("2.500s", "58.934310785s"). Negative
// durations format as "0s".
func FormatRetryDelay(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	secs, nanos := int64(d/time.Second), int64(d%time.Second)
	s := strconv.FormatInt(secs, 10)
	switch {
	case nanos == 0:
	case nanos%1e6 == 0:
		s += "." + pad(nanos/1e6, 3)
	case nanos%1e3 == 0:
		s += "." + pad(nanos/1e3, 6)
	default:
		s += "." + pad(nanos, 9)
	}
	return s + "s"
}

func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", width-len(s)) + s
}
