package modeltest

import (
	"encoding/json"
	"reflect"
	"slices"

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
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		m := &c.Messages[i]
		m.Content, m.ToolCalls = slices.Clone(m.Content), slices.Clone(m.ToolCalls)
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = slices.Clone(m.ToolCalls[j].Arguments)
		}
	}
	c.Tools = slices.Clone(r.Tools)
	for i := range c.Tools {
		c.Tools[i].Parameters = slices.Clone(c.Tools[i].Parameters)
	}
	if r.Schema != nil {
		s := *r.Schema
		s.JSON = slices.Clone(s.JSON)
		c.Schema = &s
	}
	if r.Extra != nil {
		c.Extra = copyValue(r.Extra).(map[string]any)
	}
	if r.Contract != nil {
		k := *r.Contract
		k.ModelClasses = slices.Clone(k.ModelClasses)
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
		return slices.Clone(v)
	case []byte:
		return slices.Clone(v)
	case json.RawMessage:
		return slices.Clone(v)
	}
	return v
}
