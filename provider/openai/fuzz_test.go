package openai_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
)

// roundTrip answers every request with a 200 of the given content type and
// body, in memory: the fuzz targets run the real SDK without a socket.
type roundTrip struct {
	contentType string
	body        []byte
}

func (rt roundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Request: r, ContentLength: -1,
		Header: http.Header{"Content-Type": {rt.contentType}}, Body: io.NopCloser(bytes.NewReader(rt.body))}, nil
}

func fuzzModel(contentType string, body []byte) *openai.Model {
	return openai.New(openai.Config{MaxResponseBytes: 1 << 20}, option.WithBaseURL("http://fuzz.invalid/v1/"), option.WithAPIKey("k"),
		option.WithHTTPClient(&http.Client{Transport: roundTrip{contentType, body}}))
}

// strictChoice and strictCompletion decode a completion with the JSON types
// the API documents; a body they refuse is no answer.
type strictUsage struct {
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type strictToolCall struct {
	Index    *int64  `json:"index"`
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function *struct {
		Name      *string     `json:"name"`
		Arguments *strictArgs `json:"arguments"`
	} `json:"function"`
}

// strictArgs is a tool call's arguments: their text in a string (OpenAI's
// shape) or the object itself (llama.cpp's, TGI's).
type strictArgs struct{}

func (*strictArgs) UnmarshalJSON(b []byte) error {
	if b[0] == '"' || b[0] == '{' {
		return nil
	}
	return errors.New("arguments neither a string nor an object")
}

type strictMessage struct {
	Content   *string          `json:"content"`
	ToolCalls []strictToolCall `json:"tool_calls"`
}

type strictCompletion struct {
	ID      *string `json:"id"`
	Model   *string `json:"model"`
	Choices []struct {
		Index        *int64         `json:"index"`
		Message      *strictMessage `json:"message"`
		Delta        *strictMessage `json:"delta"`
		FinishReason *string        `json:"finish_reason"`
	} `json:"choices"`
	Usage *strictUsage `json:"usage"`
}

// check reports, of an accepted answer, what is wrong with it, or "": it
// must be valid JSON, decode with the documented types, and carry what the
// adapter returned.
func checkAccepted(body []byte, resp *portico.Response) string {
	if !json.Valid(body) {
		return "invalid JSON accepted"
	}
	var c strictCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return "mistyped body accepted: " + err.Error()
	}
	if len(c.Choices) == 0 || c.Choices[0].Message == nil || c.Choices[0].FinishReason == nil || *c.Choices[0].FinishReason == "" {
		return "answer without choice, message or finish reason accepted"
	}
	if u := c.Usage; u != nil && (u.PromptTokens != nil && *u.PromptTokens < 0 || u.CompletionTokens != nil && *u.CompletionTokens < 0) {
		return "negative usage accepted"
	}
	if content := c.Choices[0].Message.Content; utf8.Valid(body) && content != nil && *content != resp.Text {
		return "text differs from the body's"
	}
	return ""
}

// FuzzAnswer feeds arbitrary 200 bodies through the real SDK and the
// adapter: never a panic, every failure a classified *portico.Error (an
// InvalidResponse wraps ErrMalformed), and an accepted answer is a valid
// completion whose text is the body's.
func FuzzAnswer(f *testing.F) {
	for _, b := range []string{
		`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		`null`, `[]`, `"x"`, `0`, `{}`, `{"choices":null}`, `{"choices":[null]}`, `{"choices":[{}]}`,
		`{"choices":[{"message":{"content":5},"finish_reason":"stop"}]}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":7}]}`,
		`{"choices":[{"message":{"content":"a","tool_calls":[{"id":1,"function":{"name":"f","arguments":{}}}]},"finish_reason":"tool_calls"}]}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"3"}}`,
		`{"choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-3}}`,
		`{"error":{"message":"This model's maximum context length is 10 tokens","code":400}}`,
		`{"object":"error","message":"m","code":500}`,
		`{"choices":[{"message":{"content":"a"}}]}`,
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := fuzzModel("application/json", []byte(body))
		resp, err := m.Generate(context.Background(), userReq("m", "hi"))
		if err != nil {
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class == portico.OK || pe.Class == portico.InvalidResponse && !errors.Is(err, portico.ErrMalformed) && !errors.Is(err, openai.ErrTooLarge) {
				t.Fatalf("Generate(%q) error %v (%T), want a classified *portico.Error", body, err, err)
			}
			return
		}
		if why := checkAccepted([]byte(body), resp); why != "" {
			t.Fatalf("Generate(%q) = %+v: %s", body, resp, why)
		}
	})
}

// sseEvents splits an event stream as the SDK's decoder does (lines, data
// fields joined by newlines, an event per blank line, a last event without
// its blank line dropped) and returns each event's data, less the events
// whose data is all blanks: the keep-alives the stream reader drops
// (blank data lines, "data" alone; see package adapt).
func sseEvents(body []byte) [][]byte {
	var out [][]byte
	var data []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, bufio.MaxScanTokenSize<<9)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if len(bytes.TrimSpace(data)) > 0 {
				out = append(out, data)
			}
			data = nil
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		if string(name) == "data" {
			data = append(append(data, value...), '\n')
		}
	}
	return out
}

// brokeOff reports whether an event stream ends inside an event: its last
// line, not a comment, has no end, or a data line with a non-blank byte
// after "data:" follows its last blank line (lines end at CRLF, LF or CR).
func brokeOff(body string) bool {
	pending := false
	for len(body) > 0 {
		i := strings.IndexAny(body, "\r\n")
		if i < 0 {
			return pending || !strings.HasPrefix(body, ":")
		}
		line := body[:i]
		if strings.HasPrefix(body[i:], "\r\n") {
			i++
		}
		body = body[i+1:]
		switch {
		case line == "":
			pending = false
		case strings.HasPrefix(line, "data:") && strings.Trim(line[5:], " \t") != "":
			pending = true
		}
	}
	return pending
}

// FuzzStream feeds arbitrary event streams through the real SDK and the
// adapter: never a panic, every failure a classified *portico.Error (a
// stream that ends inside an event broke off: Ambiguous), and an accepted
// answer has a finish reason (on choice 0, whose index the API
// requires and the adapter takes as 0 when absent), every event decodes with
// the documented types, and its chunks add up to its text.
func FuzzStream(f *testing.F) {
	chunk := func(choices string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":` + choices + "}\n\n"
	}
	for _, b := range []string{
		chunk(`[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]`) + chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`) + "data: [DONE]\n\n",
		"data: null\n\n", "data: []\n\n", "data: {\"choices\":[{\"delta\":{\"content\":3},\"finish_reason\":\"stop\"}]}\n\n",
		chunk(`[{"index":0,"delta":{"tool_calls":[{"index":"0","function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]`),
		"data: {\"error\":{\"message\":\"Overloaded\"}}\n\n", "error: {\"code\":500,\"message\":\"x\"}\n\n",
		chunk(`[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]`) + `data: {"choices":[],"usage":{"prompt_tokens":"x"}}` + "\n\n",
		"event: error\ndata: {\"object\":\"error\",\"message\":\"m\",\"code\":400}\n\n",
		chunk(`[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]`) + `data: {"choices":[],"usage":{"prompt_tok`,
		chunk(`[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]`) + "data\n\n: keep-alive\n\ndata: [DONE]\n\n",
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		m := fuzzModel("text/event-stream", []byte(body))
		req := userReq("m", "hi")
		var text strings.Builder
		req.OnChunk = func(c portico.Chunk) error { text.WriteString(c.Text); return nil }
		resp, err := m.Generate(context.Background(), req)
		if err != nil {
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class == portico.OK || pe.Class == portico.InvalidResponse && !errors.Is(err, portico.ErrMalformed) && !errors.Is(err, openai.ErrTooLarge) {
				t.Fatalf("Generate(%q) error %v (%T), want a classified *portico.Error", body, err, err)
			}
			return
		}
		if brokeOff(body) {
			t.Fatalf("Generate(%q) = %+v: accepted a stream that ends inside an event", body, resp)
		}
		if resp.FinishReason == "" || text.String() != resp.Text {
			t.Fatalf("Generate(%q) = %+v with chunks %q: want a finish reason and chunks adding up to the text", body, resp, text.String())
		}
		finished := false
		for _, ev := range sseEvents([]byte(body)) {
			if bytes.HasPrefix(ev, []byte("[DONE]")) {
				break
			}
			var c strictCompletion
			if err := json.Unmarshal(ev, &c); err != nil {
				t.Fatalf("Generate(%q) accepted a stream whose event %q does not decode: %v", body, ev, err)
			}
			for _, ch := range c.Choices {
				if (ch.Index == nil || *ch.Index == 0) && ch.FinishReason != nil && *ch.FinishReason != "" {
					finished = true
				}
			}
		}
		if !finished {
			t.Fatalf("Generate(%q) accepted a stream with no finish reason in index 0", body)
		}
	})
}

// TestStreamCutInsideAnEvent: a stream whose finish chunk came whole and
// which broke off inside the next event (the usage chunk, cut mid-line; or
// whole but without its blank line) lost what the server was sending: the
// SDK's decoder drops such an event without an error, and the adapter
// reports Ambiguous (a body cut off), never an answer.
func TestStreamCutInsideAnEvent(t *testing.T) {
	const finished = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}` + "\n\n"
	for _, body := range []string{finished + `data: {"choices":[],"usage":{"prompt_tok`, finished + `data: {"choices":[],"usage":{"prompt_tokens":1}}` + "\n"} {
		req := userReq("m", "hi")
		req.OnChunk = func(portico.Chunk) error { return nil }
		resp, err := fuzzModel("text/event-stream", []byte(body)).Generate(context.Background(), req)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Ambiguous || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("Generate(%q) = %+v, %v; want Ambiguous wrapping io.ErrUnexpectedEOF", body, resp, err)
		}
	}
}
