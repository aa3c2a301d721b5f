package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest/fakeopenai"
	"github.com/portico-llm/portico/provider/openai"
)

// Any 200 body that is not a valid completion is InvalidResponse wrapping
// ErrMalformed, streamed or not: never a panic, never an answer.
func TestBodiesNotCompletions(t *testing.T) {
	const ok = `"id":"x","object":"chat.completion","model":"m"`
	whole := map[string]string{
		"null":                      `null`,
		"array":                     `[]`,
		"string":                    `"hello"`,
		"empty object":              `{}`,
		"choice null":               `{` + ok + `,"choices":[null]}`,
		"content a number":          `{` + ok + `,"choices":[{"index":0,"message":{"role":"assistant","content":5},"finish_reason":"stop"}]}`,
		"finish reason a number":    `{` + ok + `,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":7}]}`,
		"no finish reason":          `{` + ok + `,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`,
		"message a string":          `{` + ok + `,"choices":[{"index":0,"message":"hi","finish_reason":"stop"}]}`,
		"usage a quoted number":     `{` + ok + `,"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"3"}}`,
		"negative usage":            `{` + ok + `,"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-3}}`,
		"tool call id a number":     `{` + ok + `,"choices":[{"index":0,"message":{"tool_calls":[{"id":1,"type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
		"arguments an array":        `{` + ok + `,"choices":[{"index":0,"message":{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":[]}}]},"finish_reason":"tool_calls"}]}`,
		"data after the completion": `{` + ok + `,"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]} {"more":1}`,
	}
	const chunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":`
	streamed := map[string]string{
		"chunk null":           "data: null\n\n",
		"delta a number":       chunk + `[{"index":0,"delta":{"content":3},"finish_reason":"stop"}]}` + "\n\n",
		"finish reason a list": chunk + `[{"index":0,"delta":{"content":"a"},"finish_reason":["stop"]}]}` + "\n\n",
		"index a string":       chunk + `[{"index":0,"delta":{"tool_calls":[{"index":"0","id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n",
		"usage a string":       chunk + `[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}` + "\n\ndata: {\"choices\":[],\"usage\":{\"completion_tokens\":\"1\"}}\n\n",
		"no finish reason":     chunk + `[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}` + "\n\ndata: [DONE]\n\n",
	}
	cfg := fakeopenai.Config{}
	type tc struct {
		name   string
		stream bool
	}
	var cases []tc
	add := func(name, body string, stream bool) {
		f := fakeopenai.Fault{Kind: fakeopenai.FaultStatus, Status: 200, Body: body}
		if stream {
			f.Header = http.Header{"Content-Type": {"text/event-stream"}}
		}
		cfg.Models = append(cfg.Models, fakeopenai.ModelConfig{Name: name, Script: []fakeopenai.Fault{f}})
		cases = append(cases, tc{name, stream})
	}
	for name, b := range whole {
		add(name, b, false)
	}
	for name, b := range streamed {
		add("stream "+name, b, true)
	}
	_, m := start(t, cfg, openai.Config{})
	for _, c := range cases {
		req := userReq(c.name, "hi")
		if c.stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := m.Generate(context.Background(), req)
		if pe := asError(t, err); resp != nil || pe.Class != portico.InvalidResponse || pe.Status != 200 || !errors.Is(err, portico.ErrMalformed) || !errors.Is(err, openai.ErrMalformed) {
			t.Errorf("%s: Generate = %v, %v; want invalid_response status 200 wrapping ErrMalformed", c.name, resp, err)
		}
	}
}

// countingTransport counts the response body bytes the client read.
type countingTransport struct {
	rt   http.RoundTripper
	read atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := c.rt.RoundTrip(r)
	if res != nil {
		res.Body = &countingBody{res.Body, &c.read}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// An answer whose Content-Length is above MaxResponseBytes is refused before
// a byte of it is read; one of unknown length, streamed or not, after at
// most the limit and one byte.
func TestTooLargeReadsNoMore(t *testing.T) {
	const limit = 64 << 10
	big := strings.Repeat("a", 4*limit)
	answer := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"content":"` + big + `"},"finish_reason":"stop"}]}`
	cases := []struct {
		name   string
		h      http.HandlerFunc
		stream bool
		most   int64
	}{
		{"content-length", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
			_, _ = io.WriteString(w, answer)
		}, false, 0},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for i := 0; i < len(answer); i += 4096 {
				_, _ = io.WriteString(w, answer[i:min(i+4096, len(answer))])
				w.(http.Flusher).Flush()
			}
		}, false, limit + 1},
		{"stream", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range 64 {
				_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"`+strings.Repeat("a", 4000)+`"}}]}`+"\n\n")
			}
		}, true, limit + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := fakeopenai.Start(fakeopenai.Config{Handler: c.h})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ct := &countingTransport{rt: s.Client().Transport}
			m := openai.New(openai.Config{MaxResponseBytes: limit}, option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(&http.Client{Transport: ct}))
			req := userReq("m", "hi")
			if c.stream {
				req.OnChunk = func(portico.Chunk) error { return nil }
			}
			_, err = m.Generate(context.Background(), req)
			if pe := asError(t, err); pe.Class != portico.InvalidResponse || !errors.Is(err, openai.ErrTooLarge) {
				t.Errorf("Generate error = %v, want invalid_response wrapping ErrTooLarge", err)
			}
			if n := ct.read.Load(); n > c.most {
				t.Errorf("read %d body bytes, want at most %d", n, c.most)
			}
		})
	}
}
