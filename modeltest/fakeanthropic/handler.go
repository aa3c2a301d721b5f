package fakeanthropic

import (
	"cmp"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// messagesRequest is the part of a Messages API request the server reads.
type messagesRequest struct {
	Model     string          `json:"model"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Tools  []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	OutputConfig *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
	StopSequences []string        `json:"stop_sequences"`
	Thinking      *thinkingConfig `json:"thinking"`
}

// dialect is Anthropic's part of the server: routes, request decoding, error
// bodies and answers.
func (s *Server) dialect() fakecore.Dialect[*messagesRequest] {
	return fakecore.Dialect[*messagesRequest]{
		Name: "fakeanthropic",
		Route: func(w http.ResponseWriter, r *http.Request) bool {
			switch {
			case r.URL.Path != "/v1/messages" && r.URL.Path != countPath:
				writeError(w, http.StatusNotFound, "not_found_error", "", "Not found")
				return false
			case r.Method != http.MethodPost:
				w.Header().Set("Allow", http.MethodPost)
				writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Method Not Allowed")
				return false
			}
			return true
		},
		Decode: func(_ *http.Request, body []byte) (string, bool, *messagesRequest, error) {
			req := new(messagesRequest)
			err := json.Unmarshal(body, req)
			return req.Model, req.Stream, req, err
		},
		BadRequest: func(c *fakecore.Call, _ error) {
			writeError(c.W, http.StatusBadRequest, "invalid_request_error", "", "There was an issue with the format or content of your request.")
		},
		UnknownModel: func(c *fakecore.Call) {
			writeError(c.W, http.StatusNotFound, "not_found_error", "", "model: "+c.Model)
		},
		Serve: func(fc *fakecore.Call, req *messagesRequest) {
			c := &call{Call: fc, m: s.models[fc.Model], req: req}
			if fc.R.URL.Path == countPath {
				c.countTokens()
				return
			}
			c.run()
		},
		// A named event whose data is cut: the SDK skips events without an
		// event: line.
		MalformedEvent: func() (string, []byte) {
			return "content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut`)
		},
	}
}

// call is one request being answered.
type call struct {
	*fakecore.Call
	m   *model
	req *messagesRequest

	inputTokens int
	cacheRead   int // of inputTokens, read from the prompt cache (PromptCache)
	cacheWrite  int // written to it
	cacheHour   int // of cacheWrite, for one hour
}

func (c *call) run() {
	c.W.Header().Set("request-id", "req_fake"+strconv.Itoa(c.Server().Count(c.Model)))
	if status, typ, msg := c.refusal(); msg != "" {
		writeError(c.W, status, typ, "", msg)
		return
	}
	c.inputTokens = c.countInput()
	if c.m.cfg.PromptCache { // what the rate limit sees; committed once answered
		c.cacheRead, c.cacheWrite, c.cacheHour = c.promptCache(c.Server().Since(), false)
	}
	a := c.answer()
	if c.m.cfg.RateLimit != nil && !c.rateLimit(a) || c.ServeFault(c.statusBody) {
		return
	}
	switch {
	case c.Fault.Kind == FaultContextLength:
		c.contextLength()
	case c.Fault.Kind == FaultStreamError && !c.streamError():
	case c.m.cfg.ContextWindow > 0 && c.inputTokens > c.m.cfg.ContextWindow:
		c.contextLength()
	case c.Stream:
		c.commitCache()
		c.stream(a)
	default:
		c.commitCache()
		c.whole(a)
	}
}

// countPath is the path of the count-tokens endpoint.
const countPath = "/v1/messages/count_tokens"

// countTokens answers POST /v1/messages/count_tokens: the input tokens a
// call of the same body would report, or the refusal of a request
// without a key, a version or messages, or with max_tokens (a field the
// endpoint does not take).
func (c *call) countTokens() {
	const bad, invalid = http.StatusBadRequest, "invalid_request_error"
	switch {
	case c.R.Header.Get("x-api-key") == "" && c.R.Header.Get("Authorization") == "":
		writeError(c.W, http.StatusUnauthorized, "authentication_error", "", "x-api-key header is required")
	case c.R.Header.Get("anthropic-version") == "":
		writeError(c.W, bad, invalid, "", "anthropic-version: header is required")
	case c.req.MaxTokens != nil:
		writeError(c.W, bad, invalid, "", "max_tokens: Extra inputs are not permitted")
	case len(c.req.Messages) == 0:
		writeError(c.W, bad, invalid, "", "messages: at least one message is required")
	default:
		c.Reply(http.StatusOK, []byte(`{"input_tokens":`+strconv.Itoa(c.countInput())+`}`))
	}
}

// refusal returns the error the API answers a request it refuses before
// reading it with, or "" for msg.
func (c *call) refusal() (status int, typ, msg string) {
	const bad, invalid = http.StatusBadRequest, "invalid_request_error"
	switch limit := c.m.cfg.MaxOutputTokens; {
	case c.R.Header.Get("x-api-key") == "" && c.R.Header.Get("Authorization") == "":
		return http.StatusUnauthorized, "authentication_error", "x-api-key header is required"
	case c.R.Header.Get("anthropic-version") == "":
		return bad, invalid, "anthropic-version: header is required"
	case c.req.MaxTokens == nil:
		return bad, invalid, "max_tokens: Field required"
	case len(c.req.Messages) == 0:
		return bad, invalid, "messages: at least one message is required"
	case *c.req.MaxTokens < 1:
		return bad, invalid, "max_tokens: Input should be greater than or equal to 1"
	case limit > 0 && *c.req.MaxTokens > limit:
		return bad, invalid, "max_tokens: " + strconv.Itoa(*c.req.MaxTokens) + " > " + strconv.Itoa(limit) + ", which is the maximum allowed number of output tokens for " + c.Model
	}
	if msg := c.thinkingRefusal(); msg != "" {
		return bad, invalid, msg
	}
	if msg := c.documentRefusal(); msg != "" {
		return bad, invalid, msg
	}
	return 0, "", ""
}

// streamError readies a FaultStreamError: a non-streamed call gets the
// error's status at once (streamError reports false); a stream gets the
// event and body the fault leaves empty.
func (c *call) streamError() bool {
	typ := c.streamErrorType()
	if !c.Stream {
		c.Reply(statusOf(typ), errorBody(typ, c.Fault.Code, c.message(defaultMessage(typ, c))))
		return false
	}
	c.Fault.Event = cmp.Or(c.Fault.Event, "error")
	if c.Fault.Body == "" {
		c.Fault.Body = string(errorBody(typ, c.Fault.Code, c.message(defaultMessage(typ, c))))
	}
	return true
}

// message returns the fault's message, or def.
func (c *call) message(def string) string { return cmp.Or(c.Fault.Message, def) }

// streamErrorType is FaultStreamError's error type.
func (c *call) streamErrorType() string { return cmp.Or(c.Fault.Type, "overloaded_error") }

// defaultMessage is the message Anthropic sends with an error of type typ.
func defaultMessage(typ string, c *call) string {
	switch typ {
	case "invalid_request_error":
		return c.promptTooLong()
	case "not_found_error":
		return "model: " + c.Model
	}
	for _, e := range errorTypes {
		if e.typ == typ {
			return e.msg
		}
	}
	return "Internal server error"
}

// errorTypes are Anthropic's error types with their HTTP statuses and
// usual messages (https://docs.claude.com/en/api/errors); defaultMessage
// makes those of invalid_request_error and not_found_error.
var errorTypes = [...]struct {
	status   int
	typ, msg string
}{
	{400, "invalid_request_error", ""},
	{401, "authentication_error", "invalid x-api-key"},
	{402, "billing_error", "Your credit balance is too low to access the Anthropic API."},
	{403, "permission_error", "Your API key does not have permission to use the specified resource."},
	{404, "not_found_error", ""},
	{413, "request_too_large", "Request exceeds the maximum allowed number of bytes."},
	{429, "rate_limit_error", "This request would exceed your organization's rate limit."},
	{500, "api_error", "Internal server error"},
	{504, "timeout_error", "Request timed out"},
	{529, "overloaded_error", "Overloaded"},
}

// statusOf is the HTTP status of an error type, 500 for one not listed.
func statusOf(typ string) int {
	for _, e := range errorTypes {
		if e.typ == typ {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// typeOf is the error type of an HTTP status: api_error for a 5xx not
// listed, invalid_request_error for any other.
func typeOf(status int) string {
	for _, e := range errorTypes {
		if e.status == status {
			return e.typ
		}
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// statusBody is the error body of FaultStatus.
func (c *call) statusBody(status int) []byte {
	typ := cmp.Or(c.Fault.Type, typeOf(status))
	def := defaultMessage(typ, c)
	if typ == "invalid_request_error" {
		def = "Invalid request."
	}
	return errorBody(typ, c.Fault.Code, c.message(def))
}

func (c *call) promptTooLong() string {
	limit := c.m.cfg.ContextWindow
	if limit <= 0 {
		limit = max(0, c.inputTokens-1)
	}
	return "prompt is too long: " + strconv.Itoa(c.inputTokens) + " tokens > " + strconv.Itoa(limit) + " maximum"
}

func (c *call) contextLength() {
	c.Reply(http.StatusBadRequest, errorBody("invalid_request_error", c.Fault.Code, c.message(c.promptTooLong())))
}

// rateLimit sets the anthropic-ratelimit-* headers and, when Enforce refuses
// the request, answers 429; it reports whether the answer goes on.
func (c *call) rateLimit(a *answer) bool {
	rl := c.m.cfg.RateLimit
	limits := []fakecore.Limit{{Max: rl.Requests, Window: rl.Window}, {Max: rl.InputTokens, Window: rl.Window}, {Max: rl.OutputTokens, Window: rl.Window}}
	q := c.m.quota.Take(c.Server().Since(), rl.Enforce, limits, 1, c.inputTokens-c.cacheRead, a.tokens) // cache reads do not count
	// The window's end, on the second: Anthropic's resets are RFC 3339
	// times of whole seconds.
	end := time.Now().Add(q.Reset[0])
	if t := end.Truncate(time.Second); t.Before(end) {
		end = t.Add(time.Second)
	}
	reset := end.UTC().Format(time.RFC3339)
	h := c.W.Header()
	set := func(kind string, limit, remaining int) {
		h.Set("anthropic-ratelimit-"+kind+"-limit", strconv.Itoa(limit))
		h.Set("anthropic-ratelimit-"+kind+"-remaining", strconv.Itoa(remaining))
		h.Set("anthropic-ratelimit-"+kind+"-reset", reset)
	}
	for i, kind := range [...]string{"requests", "input-tokens", "output-tokens"} {
		if limits[i].Max > 0 {
			set(kind, limits[i].Max, q.Remaining[i])
		}
	}
	if rl.InputTokens > 0 || rl.OutputTokens > 0 {
		set("tokens", rl.InputTokens+rl.OutputTokens, q.Remaining[1]+q.Remaining[2])
	}
	if q.Refused < 0 {
		return true
	}
	h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(q.Reset[0].Seconds())), 10))
	writeError(c.W, http.StatusTooManyRequests, "rate_limit_error", "",
		"This request would exceed the rate limit for your organization of "+strconv.Itoa(limits[q.Refused].Max)+" "+
			[...]string{"requests", "input tokens", "output tokens"}[q.Refused]+" per window.")
	return false
}

// errorBody is Anthropic's error body; an empty code has no details.
func errorBody(typ, code, msg string) []byte {
	type details struct {
		ErrorCode string `json:"error_code"`
	}
	type inner struct {
		Type    string   `json:"type"`
		Message string   `json:"message"`
		Details *details `json:"details,omitempty"`
	}
	e := inner{Type: typ, Message: msg}
	if code != "" {
		e.Details = &details{ErrorCode: code}
	}
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Error     inner  `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", e, "req_fake"})
	return b
}

// writeError writes an error in Anthropic's format.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, code, msg))
}

// commitCache reads and writes the prompt cache for a request about to be
// answered.
func (c *call) commitCache() {
	if c.m.cfg.PromptCache {
		c.cacheRead, c.cacheWrite, c.cacheHour = c.promptCache(c.Server().Since(), true)
	}
}
