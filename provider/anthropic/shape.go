package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/respjson"
)

// The SDK's decoder is lenient: a number where a string belongs becomes its
// text, a numeric string a number, and a field of the wrong type is left
// zero. An answer that is not of the API's shape is no answer, so these
// checks read each field's raw JSON (respjson.Field.Raw) for its type.

// isString reports whether f holds a JSON string.
func isString(f respjson.Field) bool {
	r := f.Raw()
	return len(r) > 0 && r[0] == '"'
}

// isNumber reports whether f holds a JSON number.
func isNumber(f respjson.Field) bool {
	r := f.Raw()
	return len(r) > 0 && (r[0] == '-' || r[0] >= '0' && r[0] <= '9')
}

// absentOr reports whether f is absent or null, or passes ok.
func absentOr(f respjson.Field, ok func(respjson.Field) bool) bool {
	if r := f.Raw(); r == "" || r == "null" {
		return true
	}
	return ok(f)
}

// isObject reports whether f holds a JSON object.
func isObject(f respjson.Field) bool {
	r := f.Raw()
	return len(r) > 0 && r[0] == '{'
}

// isArray reports whether f holds a JSON array.
func isArray(f respjson.Field) bool {
	r := f.Raw()
	return len(r) > 0 && r[0] == '['
}

// wellFormed reports whether a whole message is of the API's shape: a
// string stop_reason, an array of content blocks each with a string type
// (text blocks with string text, tool_use blocks with string id and name
// and an object input), and numeric token counts.
func wellFormed(msg *sdk.Message) bool {
	j := &msg.JSON
	if !isString(j.StopReason) || !isArray(j.Content) || !absentOr(j.ID, isString) || !absentOr(j.Model, isString) ||
		!absentOr(j.Usage, isObject) || !usageNumbers(&msg.Usage.JSON.InputTokens, &msg.Usage.JSON.CacheCreationInputTokens,
		&msg.Usage.JSON.CacheReadInputTokens, &msg.Usage.JSON.OutputTokens) {
		return false
	}
	for i := range msg.Content {
		if !blockWellFormed(&msg.Content[i]) {
			return false
		}
	}
	return true
}

// blockWellFormed reports whether a content block has a string type, and a
// text or tool_use block its fields.
func blockWellFormed(b *sdk.ContentBlockUnion) bool {
	switch {
	case !isString(b.JSON.Type):
		return false
	case b.Type == "text":
		return isString(b.JSON.Text)
	case b.Type == "tool_use":
		return isString(b.JSON.ID) && isString(b.JSON.Name) && absentOr(b.JSON.Input, isObject)
	}
	return true
}

// usageNumbers reports whether every token count present is a number.
func usageNumbers(fs ...*respjson.Field) bool {
	for _, f := range fs {
		if !absentOr(*f, isNumber) {
			return false
		}
	}
	return true
}

// eventWellFormed reports whether the fields of a stream event that the
// adapter reads have their types: a numeric index, a string block type and
// delta text, string stop reasons, numeric token counts.
func eventWellFormed(ev *sdk.MessageStreamEventUnion) bool {
	switch ev.Type {
	case "message_start":
		m := &ev.Message
		u := &m.Usage.JSON
		return isObject(ev.JSON.Message) && absentOr(m.JSON.ID, isString) && absentOr(m.JSON.Model, isString) &&
			usageNumbers(&u.InputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens, &u.OutputTokens)
	case "content_block_start":
		return blockStartWellFormed(ev)
	case "content_block_delta":
		return deltaWellFormed(ev)
	case "content_block_stop":
		return isNumber(ev.JSON.Index)
	case "message_delta":
		u := &ev.Usage.JSON
		return absentOr(ev.Delta.JSON.StopReason, isString) &&
			usageNumbers(&u.InputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens, &u.OutputTokens)
	}
	return true
}

// blockStartWellFormed reports whether a content_block_start has a numeric
// index and a string type, and a text or tool_use block its fields.
func blockStartWellFormed(ev *sdk.MessageStreamEventUnion) bool {
	cb := &ev.ContentBlock.JSON
	switch ev.ContentBlock.Type {
	case "text":
		return isNumber(ev.JSON.Index) && isString(cb.Type) && absentOr(cb.Text, isString)
	case "tool_use":
		return isNumber(ev.JSON.Index) && isString(cb.Type) && isString(cb.ID) && isString(cb.Name)
	}
	return isNumber(ev.JSON.Index) && isString(cb.Type)
}

// deltaWellFormed reports whether a content_block_delta has a numeric index
// and a string type, and a text or JSON delta its string.
func deltaWellFormed(ev *sdk.MessageStreamEventUnion) bool {
	d := &ev.Delta.JSON
	switch ev.Delta.Type {
	case "text_delta":
		return isNumber(ev.JSON.Index) && isString(d.Type) && isString(d.Text)
	case "input_json_delta":
		return isNumber(ev.JSON.Index) && isString(d.Type) && isString(d.PartialJSON)
	}
	return isNumber(ev.JSON.Index) && isString(d.Type)
}
