package anthropic

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// exchange watches one HTTP exchange through an SDK middleware: whether the
// request was written, the response's status and headers, and any error while
// reading the body. The classifier needs all three, which the SDK's errors do
// not carry.
type exchange struct {
	reached bool        // the SDK handed a request to the transport
	wrote   atomic.Bool // the transport finished writing the request
	status  int         // the response's status, 0 when none came
	header  http.Header // the response's headers
	readErr error       // the first error reading the body, other than io.EOF
	limit   int64       // the most body bytes to read; 0 means no limit
	read    int64       // body bytes read so far
}

// middleware is the SDK middleware (option.Middleware) recording the exchange.
func (x *exchange) middleware(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	x.reached = true
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			x.wrote.Store(true)
		}
	}}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	res, err := next(r)
	if res != nil {
		x.status, x.header = res.StatusCode, res.Header
		if res.Body != nil {
			res.Body = &watchedBody{rc: res.Body, x: x}
		}
	}
	return res, err
}

// watchedBody records the first read error of a response body.
type watchedBody struct {
	rc io.ReadCloser
	x  *exchange
}

// Read reads at most one byte beyond the exchange's limit, and fails with
// ErrTooLarge once the body has gone past it.
func (b *watchedBody) Read(p []byte) (int, error) {
	x := b.x
	if x.limit > 0 {
		if x.read > x.limit {
			return 0, ErrTooLarge
		}
		if left := x.limit - x.read; int64(len(p)) > left {
			p = p[:left+1]
		}
	}
	n, err := b.rc.Read(p)
	x.read += int64(n)
	if x.limit > 0 && x.read > x.limit {
		n, err = n-1, ErrTooLarge
	}
	if err != nil && err != io.EOF && x.readErr == nil {
		x.readErr = err
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("anthropic: response larger than MaxResponseBytes")
