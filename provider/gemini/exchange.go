package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// exchange watches one HTTP exchange: whether the request was written, the
// response's status and headers, and the first error while reading the body.
// The classifier needs all of them, which the SDK's errors do not carry.
// The Model's transport finds it in the request's context.
type exchange struct {
	reached bool        // the SDK handed a request to the transport
	wrote   atomic.Bool // the transport finished writing the request
	status  int         // the response's status, 0 when none came
	header  http.Header // the response's headers
	readErr error       // the first error reading the body, other than io.EOF
	limit   int64       // the most body bytes to read; 0 means no limit
	read    int64       // body bytes read so far
	trace   httptrace.ClientTrace
}

type exchangeKey struct{}

// transport is the RoundTripper the Model installs under the SDK's HTTP
// client: it records the exchange of the call whose context carries one and
// bounds the body it reads. Requests without an exchange pass through.
type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	x, _ := r.Context().Value(exchangeKey{}).(*exchange)
	if x == nil {
		return t.base.RoundTrip(r)
	}
	x.reached = true
	x.trace.WroteRequest = func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			x.wrote.Store(true)
		}
	}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &x.trace))
	res, err := t.base.RoundTrip(r)
	if res != nil {
		x.status, x.header = res.StatusCode, res.Header
		if res.Body != nil {
			res.Body = &watchedBody{rc: res.Body, x: x}
		}
	}
	return res, err
}

// CloseIdleConnections passes the call on, so that the SDK client's
// CloseIdleConnections reaches the real transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// watchedBody records the first read error of a response body and cuts the
// body at the exchange's limit.
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

// withExchange returns ctx carrying x for the Model's transport.
func withExchange(ctx context.Context, x *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("gemini: response larger than MaxResponseBytes")
