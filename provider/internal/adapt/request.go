package adapt

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/portico-llm/portico"
)

// ModelName checks what every adapter refuses before any work and returns
// the model to ask for: req's, else def. It fails with portico.ErrNilRequest
// for a nil req, and with a Permanent error for a negative MaxOutputTokens
// or when neither names a model.
func ModelName(req *portico.Request, def string) (string, error) {
	if req == nil {
		return "", portico.ErrNilRequest
	}
	if req.MaxOutputTokens < 0 {
		return "", &portico.Error{Class: portico.Permanent, Reason: "negative MaxOutputTokens"}
	}
	model := cmp.Or(req.Model, def)
	if model == "" {
		return "", &portico.Error{Class: portico.Permanent, Reason: "no model named"}
	}
	return model, nil
}

// MaxBytes is the body limit of a Config's MaxResponseBytes: zero means
// def, a negative value no limit (0).
func MaxBytes(cfg, def int64) int64 {
	switch {
	case cfg == 0:
		return def
	case cfg < 0:
		return 0
	}
	return cfg
}

// TextOnly joins text parts; it fails on any other part.
func TextOnly(parts []portico.Part) (string, error) {
	if len(parts) == 1 && parts[0].Kind == portico.PartText {
		return parts[0].Text, nil
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Kind != portico.PartText {
			return "", fmt.Errorf("%v part where only text is allowed", p.Kind)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// Float converts the numeric types a caller may put in Request.Extra
// (float64, float32, int, int64, int32, json.Number); ok is false for any
// other type, NaN and the infinities, which JSON cannot carry.
func Float(v any) (f float64, ok bool) {
	switch n := v.(type) {
	case float64:
		f, ok = n, true
	case float32:
		f, ok = float64(n), true
	case int:
		f, ok = float64(n), true
	case int64:
		f, ok = float64(n), true
	case int32:
		f, ok = float64(n), true
	case json.Number:
		var err error
		f, err = n.Float64()
		ok = err == nil
	}
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// Strings reads a string or a list of strings ([]string, or []any of
// strings as JSON decodes one) from Request.Extra; ok is false for anything
// else.
func Strings(v any) ([]string, bool) {
	switch s := v.(type) {
	case string:
		return []string{s}, true
	case []string:
		return s, true
	case []any:
		out := make([]string, len(s))
		for i, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = str
		}
		return out, true
	}
	return nil, false
}

// Encodable reports whether v, a Request.Extra value, encodes as JSON: the
// types JSON decodes into (numbers other than NaN and the infinities,
// strings, booleans, nil, and maps and slices of them) at once, a
// json.RawMessage when it is valid, others by encoding them.
func Encodable(v any) bool {
	switch v := v.(type) {
	case nil, string, bool, int, int64, int32:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case float32:
		return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
	case json.Number:
		_, err := json.Marshal(v)
		return err == nil
	case json.RawMessage:
		return json.Valid(v)
	case map[string]any:
		for _, e := range v {
			if !Encodable(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range v {
			if !Encodable(e) {
				return false
			}
		}
		return true
	}
	_, err := json.Marshal(v)
	return err == nil
}

// NoEmbeddings is the error of an adapter whose provider has no embedding
// API, or which does not map it, for an embedding request (Incompatible:
// a route of the request's space may serve it), and nil for any other.
func NoEmbeddings(req *portico.Request, model string) error {
	if req.Embedding == nil {
		return nil
	}
	return &portico.Error{Class: portico.Incompatible, Model: model, Reason: "no embeddings on this adapter", NotSent: true}
}
