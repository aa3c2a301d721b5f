package fakeopenai

import (
	"cmp"
	"encoding/json"
	"strings"
)

// respStream writes a streamed Responses answer as its events, in the
// order of the API reference's streaming guide: response.created and
// response.in_progress; for each output item response.output_item.added,
// its deltas (response.reasoning_summary_text.delta,
// response.output_text.delta, response.function_call_arguments.delta)
// framed by their part and done events, and response.output_item.done;
// then response.completed, or response.incomplete for an answer cut by
// max_output_tokens. There is no "data: [DONE]". A stream error is a
// response.failed event (the failed response with its error object), or
// with Fault.Event "error" an error event ({"type":"error","code",
// "message","param"}).
type respStream struct {
	c       *call
	ra      *respAnswer
	seq     int  // the next event's sequence_number
	started bool // response.created was sent
}

// emit writes one event of the given type with fields, numbered.
func (w *respStream) emit(typ string, fields map[string]any) {
	fields["type"], fields["sequence_number"] = typ, w.seq
	w.seq++
	b, _ := json.Marshal(fields)
	w.c.Event(typ, b)
}

// start sends response.created and response.in_progress, once.
func (w *respStream) start() {
	if w.started {
		return
	}
	w.started = true
	o := w.c.object(w.ra, "in_progress")
	w.emit("response.created", map[string]any{"response": o})
	w.emit("response.in_progress", map[string]any{"response": o})
}

// think is the i-th reasoning step: the reasoning item's added events
// first, then, when the request asked for summaries, the step's summary
// delta.
func (w *respStream) think(int) {
	w.start()
	c, ra := w.c, w.ra
	first := ra.reasoning == nil
	delta := c.step(ra)
	if first {
		w.emit("response.output_item.added", map[string]any{"output_index": 0, "item": respItem{ID: ra.reasoning.ID, Type: "reasoning", Summary: &[]summaryPart{}}})
		if c.summarized() {
			w.emit("response.reasoning_summary_part.added", map[string]any{"item_id": ra.reasoning.ID, "output_index": 0, "summary_index": 0, "part": summaryPart{Type: "summary_text"}})
		}
	}
	if c.summarized() {
		w.emit("response.reasoning_summary_text.delta", map[string]any{"item_id": ra.reasoning.ID, "output_index": 0, "summary_index": 0, "delta": delta})
	}
}

// endThinking sends the reasoning item's done events.
func (w *respStream) endThinking() {
	ra := w.ra
	if ra.reasoning == nil {
		return
	}
	if w.c.summarized() {
		text := strings.Join(ra.steps, "")
		w.emit("response.reasoning_summary_text.done", map[string]any{"item_id": ra.reasoning.ID, "output_index": 0, "summary_index": 0, "text": text})
		w.emit("response.reasoning_summary_part.done", map[string]any{"item_id": ra.reasoning.ID, "output_index": 0, "summary_index": 0, "part": summaryPart{Type: "summary_text", Text: text}})
	}
	w.emit("response.output_item.done", map[string]any{"output_index": 0, "item": *ra.reasoning})
}

// content sends the answer's message or function calls, paced and struck
// by the call's mid-stream fault, then the terminal event; it reports
// whether the stream ended normally.
func (w *respStream) content() bool {
	c, ra := w.c, w.ra
	w.endThinking()
	base := 0
	if ra.reasoning != nil {
		base = 1
	}
	var steps []func()
	if ra.toolCalls == nil {
		id := ra.message("", "").ID
		for j, p := range ra.content {
			steps = append(steps, func() {
				if j == 0 {
					w.messageAdded(base)
				}
				w.emit("response.output_text.delta", map[string]any{"item_id": id, "output_index": base, "content_index": 0, "delta": p, "logprobs": []string{}})
			})
		}
	}
	for k := range ra.toolCalls {
		item := ra.call(k, "", "in_progress")
		oi := base + k
		steps = append(steps, func() { w.emit("response.output_item.added", map[string]any{"output_index": oi, "item": item}) })
		for _, p := range ra.toolCalls[k].args {
			steps = append(steps, func() {
				w.emit("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": oi, "delta": p})
			})
		}
	}
	c.Fault.Event = cmp.Or(c.Fault.Event, "response.failed")
	if !c.Events(len(steps), func(i int) { steps[i]() }, w.errorData) {
		return false
	}
	w.itemsDone(base)
	status := c.finalStatus(ra)
	w.emit("response."+status, map[string]any{"response": c.object(ra, status)})
	return true
}

// messageAdded sends the added events of the answer's message, at output
// index oi.
func (w *respStream) messageAdded(oi int) {
	msg := w.ra.message("", "in_progress")
	w.emit("response.output_item.added", map[string]any{"output_index": oi, "item": msg})
	w.emit("response.content_part.added", map[string]any{"item_id": msg.ID, "output_index": oi, "content_index": 0,
		"part": textPart{Type: "output_text", Annotations: []string{}, Logprobs: []string{}}})
}

// itemsDone sends the done events of the message or the function calls.
func (w *respStream) itemsDone(base int) {
	ra := w.ra
	if ra.toolCalls == nil {
		if len(ra.content) == 0 {
			w.messageAdded(base)
		}
		text := strings.Join(ra.content, "")
		msg := ra.message(text, "completed")
		w.emit("response.output_text.done", map[string]any{"item_id": msg.ID, "output_index": base, "content_index": 0, "text": text, "logprobs": []string{}})
		w.emit("response.content_part.done", map[string]any{"item_id": msg.ID, "output_index": base, "content_index": 0, "part": (*msg.Content)[0]})
		w.emit("response.output_item.done", map[string]any{"output_index": base, "item": msg})
		return
	}
	for k := range ra.toolCalls {
		item := ra.call(k, strings.Join(ra.toolCalls[k].args, ""), "completed")
		w.emit("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": base + k, "name": item.Name, "arguments": *item.Arguments})
		w.emit("response.output_item.done", map[string]any{"output_index": base + k, "item": item})
	}
}

// errorData is the data of the stream's error event (FaultStreamError):
// response.failed with the failed response and its error, or the error
// event when Fault.Event is "error". The code is Fault.Code, else
// "server_error".
func (w *respStream) errorData() []byte {
	c := w.c
	code := cmp.Or(c.Fault.Code, "server_error")
	msg := c.message("The server had an error processing your request. Sorry about that!")
	if code == "context_length_exceeded" {
		msg = c.message("Your input exceeds the context window of this model. Please adjust your input and try again.")
	}
	fields := map[string]any{"type": "error", "sequence_number": w.seq, "code": code, "message": msg, "param": nil}
	if c.Fault.Event != "error" {
		o := c.object(w.ra, "failed")
		o.Error = &respError{Code: code, Message: msg}
		fields = map[string]any{"type": "response.failed", "sequence_number": w.seq, "response": o}
	}
	w.seq++
	b, _ := json.Marshal(fields)
	return b
}
