package portico

import (
	"context"
	"reflect"
)

// Model is anything that answers a [Request]: a provider adapter, a fake from
// package modeltest, or another Model wrapped by [Middleware]. Its contract,
// written like [net/http.RoundTripper]'s:
//
//   - Generate is safe for concurrent use by multiple goroutines.
//   - Generate does not modify the Request, nor anything it points to; a layer
//     that needs another Request copies it with [Request.Clone].
//   - Generate returns a non-nil *Response and a nil error, or a nil *Response
//     and a non-nil error: never both, never neither. Errors should be, or
//     wrap, an [*Error], whose [Class] callers branch on ([ClassOf] classifies
//     any error).
//   - Generate honours ctx: when ctx is done it returns promptly with an error
//     of class [Canceled] or [Deadline].
//   - When req.OnChunk is set, the answer's text is delivered as it arrives, in
//     order, and the delivered [Chunk.Text] values concatenate to
//     Response.Text. When OnChunk is nil nothing is streamed.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// ModelFunc adapts an ordinary function to the [Model] interface. The function
// must keep the Model contract; ModelFunc adds nothing.
type ModelFunc func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f(ctx, req).
func (f ModelFunc) Generate(ctx context.Context, req *Request) (*Response, error) {
	return f(ctx, req)
}

// Middleware wraps a [Model] in a layer of policy (limit, retry, break, route,
// fall back, validate, trace) and returns the wrapped Model. A Middleware is called
// once, when the stack is built, not per request.
type Middleware func(Model) Model

// IsNil reports whether m cannot answer anything: it is nil, or an
// interface holding a nil pointer, func, map, channel or slice (a typed nil
// such as a nil *openai.Model, or a nil [ModelFunc]), whose Generate would
// panic at the first call. Every constructor and Wrap that takes a Model
// refuses one with it, when the stack is built rather than at the first
// request.
func IsNil(m Model) bool {
	if m == nil {
		return true
	}
	switch v := reflect.ValueOf(m); v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// Chain wraps m in the given middleware and returns the outermost Model. The first
// middleware is the outermost: Chain(m, a, b, c) returns a(b(c(m))), so a request
// passes through a, then b, then c, then reaches m, the order in which the layers
// are written. Nil middlewares are skipped. Chain panics if m is nil ([IsNil]),
// since a stack without a base cannot answer anything.
func Chain(m Model, mws ...Middleware) Model {
	PanicIfNil(m, "portico: Chain of a nil Model")
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			m = mws[i](m)
		}
	}
	return m
}
