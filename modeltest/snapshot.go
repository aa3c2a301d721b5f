package modeltest

import (
	"encoding/json"
	"reflect"

	"github.com/portico-llm/portico"
)

// snapshot is a deep copy of a Request, taken before a call, to detect in-place
// modification by comparing after it.
type snapshot struct {
	req     portico.Request // deep copy with OnChunk cleared
	onChunk uintptr         // the callback's code pointer; 0 when nil
}

func takeSnapshot(r *portico.Request) snapshot {
	c := *r
	c.OnChunk = nil
	if r.Messages != nil {
		c.Messages = make([]portico.Message, len(r.Messages))
		for i, m := range r.Messages {
			if m.Content != nil {
				m.Content = append([]portico.Part{}, m.Content...)
			}
			m.ToolCalls = copyToolCalls(m.ToolCalls)
			c.Messages[i] = m
		}
	}
	if r.Tools != nil {
		c.Tools = make([]portico.Tool, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = copyRaw(t.Parameters)
			c.Tools[i] = t
		}
	}
	if r.Schema != nil {
		s := *r.Schema
		s.JSON = copyRaw(s.JSON)
		c.Schema = &s
	}
	if r.Extra != nil {
		c.Extra = copyValue(r.Extra).(map[string]any)
	}
	if r.Contract != nil {
		k := *r.Contract
		if k.ModelClasses != nil {
			k.ModelClasses = append([]string{}, k.ModelClasses...)
		}
		c.Contract = &k
	}
	s := snapshot{req: c}
	if r.OnChunk != nil {
		s.onChunk = reflect.ValueOf(r.OnChunk).Pointer()
	}
	return s
}

// same reports whether r still equals the snapshot, deeply.
func (s *snapshot) same(r *portico.Request) bool {
	c := *r
	c.OnChunk = nil
	var p uintptr
	if r.OnChunk != nil {
		p = reflect.ValueOf(r.OnChunk).Pointer()
	}
	return p == s.onChunk && reflect.DeepEqual(s.req, c)
}

func copyToolCalls(tcs []portico.ToolCall) []portico.ToolCall {
	if tcs == nil {
		return nil
	}
	out := make([]portico.ToolCall, len(tcs))
	for i, tc := range tcs {
		tc.Arguments = copyRaw(tc.Arguments)
		out[i] = tc
	}
	return out
}

func copyRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage{}, b...)
}

// copyValue deep-copies the JSON-like values found in Request.Extra.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = copyValue(x)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		s := make([]any, len(v))
		for i, x := range v {
			s[i] = copyValue(x)
		}
		return s
	case []string:
		if v == nil {
			return v
		}
		return append([]string{}, v...)
	case []byte:
		if v == nil {
			return v
		}
		return append([]byte{}, v...)
	case json.RawMessage:
		return copyRaw(v)
	}
	return v
}
