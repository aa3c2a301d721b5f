package fakeopenai

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// chatRequest is the part of a chat-completions request the server reads.
type chatRequest struct {
	Model                string        `json:"model"`
	Messages             []chatMessage `json:"messages"`
	ContinueFinalMessage bool          `json:"continue_final_message"`
	Stream               bool          `json:"stream"`
	StreamOptions        *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               []chatTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	ResponseFormat      *responseFormat `json:"response_format"`

	// responses is the Responses API request this one was read from, or
	// nil for a chat completion (see responses.go).
	responses *responsesRequest
	// embeddings is the embeddings request this one was read from, or nil
	// (see embeddings.go).
	embeddings *embeddingsRequest
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Prefix  bool            `json:"prefix"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict bool            `json:"strict"`
	} `json:"json_schema"`
}

// dialect is OpenAI's part of the server: routes, request decoding, error
// bodies and answers.
func (s *Server) dialect() fakecore.Dialect[*chatRequest] {
	return fakecore.Dialect[*chatRequest]{
		Name: "fakeopenai",
		Route: func(w http.ResponseWriter, r *http.Request) bool {
			path := strings.TrimPrefix(r.URL.Path, "/v1")
			switch {
			case path == "/files" && r.Method == http.MethodPost:
				serveFile(w, r)
				return false
			case path != "/chat/completions" && path != "/responses" && path != "/embeddings":
				writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
				return false
			case r.Method != http.MethodPost:
				w.Header().Set("Allow", http.MethodPost)
				writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "Only POST is allowed.")
				return false
			}
			return true
		},
		Decode: func(r *http.Request, body []byte) (string, bool, *chatRequest, error) {
			switch strings.TrimPrefix(r.URL.Path, "/v1") {
			case "/responses":
				return decodeResponses(body)
			case "/embeddings":
				return decodeEmbeddings(body)
			}
			req := new(chatRequest)
			err := json.Unmarshal(body, req)
			return req.Model, req.Stream, req, err
		},
		BadRequest: func(c *fakecore.Call, _ error) {
			writeError(c.W, http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request.")
		},
		UnknownModel: func(c *fakecore.Call) {
			writeError(c.W, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", "The model does not exist or you do not have access to it.")
		},
		Serve: func(fc *fakecore.Call, req *chatRequest) {
			c := &call{Call: fc, srv: s, m: s.models[fc.Model], req: req}
			if req.embeddings != nil {
				c.embed()
				return
			}
			if req.responses != nil && !s.translate(c) {
				return
			}
			c.run()
		},
	}
}

// call is one request being answered.
type call struct {
	*fakecore.Call
	srv *Server
	m   *model
	req *chatRequest

	inputTokens int
}

func (c *call) run() {
	if len(c.req.Messages) == 0 {
		writeError(c.W, http.StatusBadRequest, "invalid_request_error", "", "messages", "messages must be a non-empty array.")
		return
	}
	c.inputTokens = c.countInput()
	if refused, reset := c.rateLimitHeaders(); refused != "" {
		c.W.Header().Set("retry-after-ms", strconv.FormatInt(max(1, reset.Milliseconds()), 10))
		writeError(c.W, http.StatusTooManyRequests, refused, "rate_limit_exceeded", "",
			"Rate limit reached for "+refused+". Please try again later.")
		return
	}
	if c.ServeFault(c.statusBody) {
		return
	}
	switch c.Fault.Kind {
	case FaultContextLength:
		c.contextLength()
		return
	case FaultStreamError:
		if !c.req.Stream {
			if c.streamErrorCode() == "context_length_exceeded" {
				c.contextLength()
			} else {
				c.Reply(http.StatusServiceUnavailable, errorBody("server_error", c.streamErrorCode(), "", c.message("The server is overloaded. Please try again later.")))
			}
			return
		}
	}
	if cw := c.m.cfg.ContextWindow; cw > 0 && c.inputTokens > cw {
		c.contextLength()
		return
	}
	a := c.answer()
	switch {
	case c.req.responses != nil:
		c.responses(a)
	case c.req.Stream:
		c.stream(a)
	default:
		c.whole(a)
	}
}

// message returns the fault's message, or def.
func (c *call) message(def string) string { return cmp.Or(c.Fault.Message, def) }

// streamErrorCode is FaultStreamError's error code.
func (c *call) streamErrorCode() string { return cmp.Or(c.Fault.Code, "overloaded") }

func (c *call) contextLength() {
	max := c.m.cfg.ContextWindow
	c.Reply(http.StatusBadRequest, errorBody("invalid_request_error", "context_length_exceeded", "messages",
		c.message("This model's maximum context length is "+strconv.Itoa(max)+" tokens. However, your messages resulted in "+strconv.Itoa(c.inputTokens)+" tokens. Please reduce the length of the messages.")))
}

// statusBody is the OpenAI error body of FaultStatus with the given status.
func (c *call) statusBody(status int) []byte {
	f := c.Fault
	typ, code, param, msg := "server_error", "", "", "The server had an error while processing your request."
	switch {
	case status == http.StatusTooManyRequests:
		typ, code, msg = "requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."
	case status == http.StatusUnauthorized:
		typ, code, msg = "invalid_request_error", "invalid_api_key", "Incorrect API key provided."
	case status == http.StatusForbidden:
		typ, code, msg = "invalid_request_error", "unsupported_country_region_territory", "Country, region, or territory not supported."
	case status == http.StatusNotFound:
		typ, code, param, msg = "invalid_request_error", "model_not_found", "model", "The model does not exist or you do not have access to it."
	case status == http.StatusServiceUnavailable:
		msg = "The server is overloaded or not ready yet."
	case status < 500:
		typ, msg = "invalid_request_error", "Invalid request."
	}
	return errorBody(cmp.Or(f.Type, typ), cmp.Or(f.Code, code), param, c.message(msg))
}

// rateLimitHeaders sets the x-ratelimit-* headers when the model has a
// RateLimit. When Enforce refuses the request it returns which limit
// ("requests" or "tokens") and when its window resets.
func (c *call) rateLimitHeaders() (refused string, reset time.Duration) {
	rl := c.m.cfg.RateLimit
	if rl == nil {
		return "", 0
	}
	limits := []fakecore.Limit{{Max: rl.Requests, Window: rl.ResetRequests}, {Max: rl.Tokens, Window: rl.ResetTokens}}
	q := c.m.quota.Take(c.Server().Since(), rl.Enforce, limits, 1, c.inputTokens+c.maxOutput())
	h := c.W.Header()
	for i, kind := range quotaKinds {
		if limits[i].Max > 0 {
			h.Set("x-ratelimit-limit-"+kind, strconv.Itoa(limits[i].Max))
			h.Set("x-ratelimit-remaining-"+kind, strconv.Itoa(q.Remaining[i]))
			h.Set("x-ratelimit-reset-"+kind, FormatReset(q.Reset[i]))
		}
	}
	if q.Refused < 0 {
		return "", 0
	}
	return quotaKinds[q.Refused], q.Reset[q.Refused]
}

// quotaKinds name the counters of a RateLimit, in the headers and a 429's
// error type.
var quotaKinds = [...]string{"requests", "tokens"}

// FormatReset formats a reset duration as OpenAI's x-ratelimit-reset-* headers
// do: Go's duration syntax rounded to the millisecond ("1s", "6m0s", "20ms",
// "1.5s"); negative durations format as "0s".
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d.Round(time.Millisecond).String()
}

// errorBody is an error in OpenAI's format; empty code and param are null.
func errorBody(typ, code, param, msg string) []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: msg, Type: typ}
	if code != "" {
		b.Code = &code
	}
	if param != "" {
		b.Param = &param
	}
	data, _ := json.Marshal(map[string]body{"error": b})
	return data
}

// writeError writes an error in OpenAI's format.
func writeError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, code, param, msg))
}
