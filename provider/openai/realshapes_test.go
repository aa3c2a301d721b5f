package openai_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai"
	"github.com/portico-llm/portico/validate"
)

// Shapes real OpenAI-compatible servers send that the dialect table did not
// cover, each with its source.

// OpenRouter answers 403 when the model's provider requires moderation and
// the prompt was flagged (openrouter.ai/docs/api-reference/errors: "403:
// Your chosen model requires moderation and your input was flagged", with
// metadata reasons, flagged_input, provider_name, model_slug; the message
// as quoted in many clients' tests: "<model> requires moderation on
// <provider>. Your input was flagged for \"violence\". No credits were
// charged."). The request is at fault, not the route's key: another route
// (another model or provider) may answer it, and no breaker should count it.
func TestOpenRouterModeration403(t *testing.T) {
	m := raw(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":{"code":403,"message":"openai/gpt-4o requires moderation on OpenAI. Your input was flagged for \"harassment\". No credits were charged.","metadata":{"reasons":["harassment"],"flagged_input":"you are a...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}`))
	})
	_, err := m.Generate(context.Background(), userReq("m", "hi"))
	e := asError(t, err)
	if e.Class != portico.Incompatible || e.Reason != "content filtered" || e.Class.RouteFault() {
		t.Errorf("Generate error = %v (class %v, reason %q), want Incompatible \"content filtered\", no route fault", err, e.Class, e.Reason)
	}
}

// Some servers resend the whole function name in every tool-call delta:
// MiniMax M2 through NVIDIA NIM (NousResearch/hermes-agent#8259, fixed in
// PR #12230 with "read_fileread_file" as the symptom), a proxy translating
// Codex (mcowger/plexus#719). OpenAI's Node SDK and LiteLLM assign the name
// rather than append it; appending makes "getget", a tool that does not
// exist.
func TestToolNameResentEachDelta(t *testing.T) {
	m := raw(t, openai.Config{}, sse(
		delta(`{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}}]}`),
		delta(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":"{\"a\":"}}]}`),
		delta(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":"1}"}}]}`),
		finish("tool_calls"), `[DONE]`))
	resp, _, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "get" || string(resp.ToolCalls[0].Arguments) != `{"a":1}` {
		t.Errorf("ToolCalls = %+v, want one call get({\"a\":1})", resp.ToolCalls)
	}
}

// Gemini's OpenAI-compatible endpoint
// (generativelanguage.googleapis.com/v1beta/openai/) streams tool calls
// without "index" (open-webui/computer#224, THU-MAIC/OpenMAIC#1556), so
// parallel calls all read as index 0 and are merged into one call with
// concatenated names and arguments (NousResearch/hermes-agent#62937). A
// delta without an index whose id differs from the current call's starts
// a new call.
func TestToolCallsWithoutIndex(t *testing.T) {
	m := raw(t, openai.Config{}, sse(
		delta(`{"role":"assistant","tool_calls":[{"id":"function-call-1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"id":"function-call-2","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}}]}`),
		finish("tool_calls"), `[DONE]`))
	resp, _, err := stream(t, m, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].Name != "get_weather" || resp.ToolCalls[1].Name != "get_time" ||
		string(resp.ToolCalls[0].Arguments) != `{"city":"Paris"}` || string(resp.ToolCalls[1].Arguments) != `{"tz":"UTC"}` {
		t.Errorf("ToolCalls = %+v, want get_weather({\"city\":\"Paris\"}) and get_time({\"tz\":\"UTC\"})", resp.ToolCalls)
	}
}

// OpenRouter normalises finish_reason to stop, length, tool_calls,
// content_filter or error, and puts an error on the choice itself
// (openrouter.ai/docs/api-reference/overview, "Responses": StreamingChoice
// and NonStreamingChoice have "error?: ErrorResponse"; finish_reason
// "error" "if the model finishes the request with an error"). Without a
// top-level "error" the SDK does not stop the stream, and the adapter
// returned a cut answer as a success with FinishReason "error", which no
// layer retries or falls back from.
func TestFinishReasonErrorOnChoice(t *testing.T) {
	m := raw(t, openai.Config{}, sse(
		delta(`{"role":"assistant","content":"The answer is"}`),
		chunk(`[{"index":0,"delta":{"content":""},"finish_reason":"error","native_finish_reason":"error","error":{"code":502,"message":"Provider returned error","metadata":{"provider_name":"Chutes","raw":"upstream closed"}}}]`),
		`[DONE]`))
	resp, _, err := stream(t, m, context.Background())
	if resp != nil || err == nil {
		t.Fatalf("Generate = %+v, %v; want an error", resp, err)
	}
	if e := asError(t, err); e.Class != portico.Transient {
		t.Errorf("Generate error = %v, want Transient", err)
	}

	m = raw(t, openai.Config{}, body(`{"id":"gen-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is"},"finish_reason":"error","native_finish_reason":"error","error":{"code":502,"message":"Provider returned error"}}]}`))
	resp, err = m.Generate(context.Background(), userReq("m", "hi"))
	if resp != nil || err == nil {
		t.Fatalf("Generate (not streamed) = %+v, %v; want an error", resp, err)
	}
	if e := asError(t, err); e.Class != portico.Transient {
		t.Errorf("Generate (not streamed) error = %v, want Transient", err)
	}
}

// Proxies send blank data lines as keep-alives (netease-lcap/wave-agent#1326,
// Growth-Circle/cadis#2329: "data: " every few seconds), and a ping event
// may come with empty data. The event-stream format dispatches nothing for
// an empty data buffer; the SDK's decoder dispatched "\n", which failed the
// stream as malformed after its first chunk.
func TestBlankDataKeepAlives(t *testing.T) {
	m := raw(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range []string{"data: \n\n", "data: " + delta(`{"content":"a"}`) + "\n\n", "data:\r\n\r\n",
			"event: ping\ndata: \n\n", "data: " + delta(`{"content":"b"}`) + "\n\n", "data: " + finish("stop") + "\n\n", "data: [DONE]\n\n"} {
			_, _ = w.Write([]byte(f))
			w.(http.Flusher).Flush()
		}
	})
	resp, got, err := stream(t, m, context.Background())
	if err != nil || resp.Text != "ab" || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Generate = %v, %v, chunks %q; want \"ab\" in chunks a, b", resp, err, got)
	}
}

// llama.cpp's server sent a tool call's arguments as a JSON object rather
// than its text in a string (ggml-org/llama.cpp#20198, then an option,
// --tool-args-object, in #20202), and so does Hugging Face TGI
// (huggingface/text-generation-inference#2136). The call is the same: its
// Arguments are the object's text, streamed or not, and package validate
// judges them as any.
func TestToolArgumentsAsObject(t *testing.T) {
	const completion = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",` +
		`"function":{"name":"get","arguments":{"city": "Paris"}}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	streamed := sse(
		delta(`{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":{"city": "Paris"}}}]}`),
		finish("tool_calls"), `[DONE]`)
	for _, tc := range []struct {
		name   string
		h      http.HandlerFunc
		stream bool
	}{{"completion", body(completion), false}, {"stream", streamed, true}} {
		m := raw(t, openai.Config{}, tc.h)
		req := userReq("m", "weather?")
		req.Tools = []portico.Tool{{Name: "get", Parameters: []byte(`{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}`)}}
		if tc.stream {
			req.OnChunk = func(portico.Chunk) error { return nil }
		}
		resp, err := validate.MustNew(validate.Config{}).Wrap(m).Generate(context.Background(), req)
		if err != nil || len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Arguments) != `{"city": "Paris"}` {
			t.Fatalf("%s: Generate = %+v, %v; want one call with arguments {\"city\": \"Paris\"}", tc.name, resp, err)
		}
	}
}
