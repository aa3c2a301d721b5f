package fakeopenai

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
)

// respObject is a Responses API response object (openai-go's
// responses.Response), as the answer and the response.* stream events
// carry it.
type respObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Error              *respError      `json:"error"`
	IncompleteDetails  *respIncomplete `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []respItem      `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          respReasoning   `json:"reasoning"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopP               float64         `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *respUsage      `json:"usage"`
	Metadata           struct{}        `json:"metadata"`
}

type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type respIncomplete struct {
	Reason string `json:"reason"`
}

type respReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// respItem is an output item: a reasoning item, a message or a function
// call (openai-go's responses.ResponseOutputItemUnion).
type respItem struct {
	ID               string         `json:"id"`
	Type             string         `json:"type"`
	Status           string         `json:"status,omitempty"`
	Summary          *[]summaryPart `json:"summary,omitempty"`
	EncryptedContent *string        `json:"encrypted_content,omitempty"`
	Role             string         `json:"role,omitempty"`
	Content          *[]textPart    `json:"content,omitempty"`
	Arguments        *string        `json:"arguments,omitempty"`
	CallID           string         `json:"call_id,omitempty"`
	Name             string         `json:"name,omitempty"`
}

type summaryPart struct {
	Type string `json:"type"` // summary_text
	Text string `json:"text"`
}

type textPart struct {
	Type        string   `json:"type"` // output_text
	Text        string   `json:"text"`
	Annotations []string `json:"annotations"`
	Logprobs    []string `json:"logprobs"`
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// respAnswer is an answer in the Responses format: its reasoning (nil for
// none), then its message or its function calls.
type respAnswer struct {
	*answer
	id        string
	reasoning *respItem
	steps     []string // the reasoning summary's pieces
}

// responses writes the answer a to a Responses request, streamed or not,
// and stores it unless the request says store: false.
func (c *call) responses(a *answer) {
	ra := &respAnswer{answer: a, id: "resp_" + strings.TrimPrefix(a.id, "chatcmpl-")}
	if !c.req.Stream {
		if c.reasons() {
			c.think(ra, c.plannedThoughts())
		}
		c.Whole(c.respBody(ra, c.finalStatus(ra)), a.tokens)
		c.keep(ra)
		return
	}
	w := &respStream{c: c, ra: ra}
	thoughts, ok := c.BeginStream(fakecore.Waiting{Think: w.think})
	if !ok {
		return
	}
	w.start()
	if c.reasons() && thoughts == 0 {
		w.think(0)
	}
	if !w.content() {
		return
	}
	c.keep(ra)
}

// plannedThoughts is how many reasoning steps a non-streamed answer made
// while it waited its TTFT: one per ThinkEvery, at least one.
func (c *call) plannedThoughts() int {
	n := 1
	if every, ttft := c.m.cfg.ThinkEvery, c.m.cfg.TTFT; every > 0 && ttft > every {
		n = int((ttft + every - 1) / every)
	}
	return n
}

// think adds n reasoning steps to ra's reasoning item, making it first.
func (c *call) think(ra *respAnswer, n int) {
	for range n {
		c.step(ra)
	}
}

// step adds one reasoning step to ra's reasoning item and returns its
// summary text.
func (c *call) step(ra *respAnswer) string {
	if ra.reasoning == nil {
		ra.reasoning = &respItem{ID: "rs_" + strings.TrimPrefix(ra.id, "resp_"), Type: "reasoning", Summary: &[]summaryPart{}}
		if c.encrypted() {
			enc := c.srv.seal(ra.reasoning.ID)
			ra.reasoning.EncryptedContent = &enc
		}
	}
	s := "step " + strconv.Itoa(len(ra.steps)+1) + ". "
	ra.steps = append(ra.steps, s)
	if c.summarized() {
		*ra.reasoning.Summary = []summaryPart{{Type: "summary_text", Text: strings.Join(ra.steps, "")}}
	}
	return s
}

// reasoningTokens counts a reasoning step as two tokens ("step", "N.").
func (ra *respAnswer) reasoningTokens() int { return 2 * len(ra.steps) }

// finalStatus is "incomplete" for an answer cut by max_output_tokens,
// else "completed".
func (c *call) finalStatus(ra *respAnswer) string {
	if ra.finish == "length" {
		return "incomplete"
	}
	return "completed"
}

// items are the answer's output items, complete.
func (ra *respAnswer) items() []respItem {
	var out []respItem
	if ra.reasoning != nil {
		out = append(out, *ra.reasoning)
	}
	if ra.toolCalls == nil {
		out = append(out, ra.message(strings.Join(ra.content, ""), "completed"))
	}
	for i := range ra.toolCalls {
		out = append(out, ra.call(i, strings.Join(ra.toolCalls[i].args, ""), "completed"))
	}
	return out
}

func (ra *respAnswer) message(text, status string) respItem {
	content := []textPart{}
	if status == "completed" {
		content = append(content, textPart{Type: "output_text", Text: text, Annotations: []string{}, Logprobs: []string{}})
	}
	return respItem{ID: "msg_" + strings.TrimPrefix(ra.id, "resp_"), Type: "message", Status: status, Role: "assistant", Content: &content}
}

func (ra *respAnswer) call(i int, args, status string) respItem {
	tc := ra.toolCalls[i]
	return respItem{ID: "fc_" + strings.TrimPrefix(tc.id, "call_"), Type: "function_call", Status: status, Arguments: &args, CallID: tc.id, Name: tc.name}
}

// object is the response object of ra in the given status; its output
// and usage only once it has ended.
func (c *call) object(ra *respAnswer, status string) *respObject {
	rr := c.req.responses
	o := &respObject{ID: ra.id, Object: "response", CreatedAt: created, Status: status, Instructions: rr.Instructions,
		MaxOutputTokens: rr.MaxOutputTokens, Model: c.req.Model, Output: []respItem{}, ParallelToolCalls: rr.ParallelToolCalls == nil || *rr.ParallelToolCalls,
		PreviousResponseID: rr.PreviousResponseID, Store: c.stores(), Temperature: 1, TopP: 1, Truncation: "disabled",
		Text: rr.raw.Text, ToolChoice: rr.raw.ToolChoice, Tools: rr.raw.Tools}
	if rr.Reasoning != nil {
		o.Reasoning = respReasoning{Effort: rr.Reasoning.Effort, Summary: rr.Reasoning.Summary}
	}
	if o.Text == nil {
		o.Text = json.RawMessage(`{"format":{"type":"text"}}`)
	}
	if o.ToolChoice == nil {
		o.ToolChoice = json.RawMessage(`"auto"`)
	}
	if o.Tools == nil {
		o.Tools = json.RawMessage(`[]`)
	}
	switch status {
	case "completed", "incomplete":
		o.Output = ra.items()
		u := &respUsage{InputTokens: c.inputTokens, OutputTokens: ra.tokens + ra.reasoningTokens()}
		u.InputTokensDetails.CachedTokens = max(0, min(c.m.cfg.CachedInputTokens, c.inputTokens))
		u.OutputTokensDetails.ReasoningTokens = ra.reasoningTokens()
		u.TotalTokens = u.InputTokens + u.OutputTokens
		o.Usage = u
	}
	if status == "incomplete" {
		o.IncompleteDetails = &respIncomplete{Reason: "max_output_tokens"}
	}
	return o
}

// respBody is the JSON of ra's response object in the given status.
func (c *call) respBody(ra *respAnswer, status string) []byte {
	b, _ := json.Marshal(c.object(ra, status))
	return b
}

// keep stores the answered conversation under the response's id, unless
// the request says store: false.
func (c *call) keep(ra *respAnswer) {
	if !c.stores() {
		return
	}
	msgs := append([]chatMessage(nil), c.req.Messages...)
	var items []string
	if ra.reasoning != nil {
		items = append(items, ra.reasoning.ID)
	}
	if ra.toolCalls == nil {
		msgs = append(msgs, chatMessage{Role: "assistant", Content: jsonString(strings.Join(ra.content, ""))})
	}
	for _, tc := range ra.toolCalls {
		msgs = append(msgs, chatMessage{Role: "assistant", Content: jsonString(tc.name + " " + strings.Join(tc.args, ""))})
	}
	c.srv.stored.put(ra.id, msgs, items)
}
