package openai

import (
	"cmp"
	"context"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/internal/adapt"
)

// stream runs a streamed response and assembles the Response from its
// events (the API reference's "Streaming events"; openai-go's
// responses.ResponseStreamEventUnion). The stream ends with
// response.completed or response.incomplete, whose response object is the
// answer's; response.failed and error end it with an error.
func (r *Responses) stream(ctx context.Context, req *portico.Request, params responses.ResponseNewParams, opts []option.RequestOption, x *adapt.Exchange, model string) (*portico.Response, error) {
	s := r.chat.client.Responses.NewStreaming(ctx, params, opts...)
	defer s.Close()
	st := respStream{r: r, req: req, x: x, model: model, reason: req.Reasoning != nil && req.Reasoning.Stream}
	for s.Next() {
		if ctx.Err() != nil {
			break // no chunk reaches the caller after it canceled
		}
		ev := s.Current()
		if done, err := st.event(ctx, &ev); err != nil || done {
			if err != nil {
				return nil, err
			}
			return st.end()
		}
	}
	if err := cmp.Or(s.Err(), ctx.Err(), x.ReadErr); err != nil {
		return nil, r.chat.classify(ctx, err, x, model)
	}
	return nil, malformed(x, model, "stream ended without response.completed")
}

// respStream is what a streamed response has said so far; stream owns it.
type respStream struct {
	r      *Responses
	req    *portico.Request
	x      *adapt.Exchange
	model  string
	reason bool // the caller asked for the reasoning stream (Reasoning.Stream)
	id     string
	text   strings.Builder
	final  *responses.Response // the response of response.completed or .incomplete
}

// event takes in one event; done is true after the terminal event.
func (st *respStream) event(ctx context.Context, ev *responses.ResponseStreamEventUnion) (done bool, err error) {
	switch ev.Type {
	case "response.output_text.delta", "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		if !typed(ev.JSON.Delta, tString) {
			return false, malformed(st.x, st.model, "mistyped event")
		}
		return false, st.delta(ctx, ev.Type == "response.output_text.delta", ev.Delta)
	case "response.function_call_arguments.delta":
		return false, st.chunk(portico.Chunk{})
	case "response.output_item.added":
		if ev.Item.Type == "function_call" {
			return false, st.chunk(portico.Chunk{})
		}
	case "response.completed", "response.incomplete":
		st.final = &ev.Response
		return true, nil
	case "response.failed":
		return false, st.failed(&ev.Response)
	case "error":
		f := errorFields{Code: ev.Code, Message: ev.Message, Param: ev.Param, Found: true}
		return false, st.r.chat.inBand(f, st.x, st.model)
	case "response.created", "response.in_progress", "response.queued":
		st.id = cmp.Or(ev.Response.ID, st.id)
	}
	adapt.Alive(ctx) // a lifecycle event, an item's boundary, a reasoning step: progress all the same
	return false, nil
}

// delta passes on a text delta, or a reasoning one (adapt.Think).
func (st *respStream) delta(ctx context.Context, text bool, d string) error {
	if !text {
		return adapt.Think(ctx, st.reason, d, st.chunk)
	}
	st.text.WriteString(d)
	return st.chunk(portico.Chunk{Text: d})
}

// failed is the error of a response.failed event, with the usage the
// response spent before it failed.
func (st *respStream) failed(resp *responses.Response) error {
	if why := checkResponse(resp); why != "" {
		return malformed(st.x, st.model, why)
	}
	err := st.r.failed(resp, st.x, st.model)
	if resp.JSON.Usage.Valid() {
		adapt.Billed(err, responsesUsage(&resp.Usage))
	}
	return err
}

// chunk passes c to OnChunk.
func (st *respStream) chunk(c portico.Chunk) error {
	if err := st.req.OnChunk(c); err != nil {
		return adapt.ChunkError(err, st.model)
	}
	return nil
}

// end assembles the Response from the terminal event's response object,
// with the text the deltas delivered.
func (st *respStream) end() (*portico.Response, error) {
	resp, err := st.r.answer(st.final, st.x, st.model)
	if err != nil {
		return nil, err
	}
	resp.Text = st.text.String()
	return resp, nil
}
