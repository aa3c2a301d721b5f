package adapt

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
)

// Exchange watches one HTTP exchange of one Generate call. The adapter sets
// Limit, TooLarge and ErrorLines, then calls Begin and Watch around the
// transport; the other exported fields are what it saw. An Exchange is for
// one call and one goroutine, but for the written flag, which the transport
// sets from its own.
type Exchange struct {
	// Limit is the most body bytes read; 0 means no limit.
	Limit int64
	// TooLarge is the adapter's error for a body past Limit (its
	// ErrTooLarge), returned by reads and recorded as ReadErr.
	TooLarge error
	// ErrorLines watches an event stream for "error:" lines (ErrorLine).
	ErrorLines bool

	// Reached is true once the SDK handed a request to the transport.
	Reached bool
	// Status is the response's status, 0 when none came.
	Status int
	// Header is the response's headers, nil when none came.
	Header http.Header
	// ErrBody is the body of a response with status >= 400, as sent, at
	// most ErrBodyLimit bytes of it.
	ErrBody []byte
	// ReadErr is the first error reading the body, other than io.EOF.
	ReadErr error
	// ErrorLine is the first "error:" line of an event stream, when
	// ErrorLines is set.
	ErrorLine SSEErrorLine

	wrote atomic.Bool // the transport finished writing the request
	read  int64       // body bytes read so far
	// first and last are the offsets of the first and last bytes of a JSON
	// body that are not white space (-1: none yet).
	first, last int64
	trace       httptrace.ClientTrace
}

// ErrBodyLimit bounds the bytes of an error body kept for classification:
// error objects are a few hundred bytes, and the rest is read and dropped.
const ErrBodyLimit = 64 << 10

// Wrote reports whether the transport finished writing the request. It is
// safe to call from any goroutine.
func (x *Exchange) Wrote() bool { return x.wrote.Load() }

// Begin records that the request reached the transport and returns r with a
// client trace that records when it was written.
func (x *Exchange) Begin(r *http.Request) *http.Request {
	x.Reached = true
	x.trace.WroteRequest = func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			x.wrote.Store(true)
		}
	}
	return r.WithContext(httptrace.WithClientTrace(r.Context(), &x.trace))
}

// Watch records the response of the request Begin returned and bounds its
// body, then returns what the SDK gets in its place: a Content-Length above
// Limit is refused at once (nil and TooLarge, the body closed); an error
// body (status >= 400) is read here and replayed; a JSON body of unknown
// length is read here in blocks and replayed; an event stream (less its
// blank data lines: see blankData), or a body of known length, is read as
// the SDK reads it, through the bound. A body that cannot be read here
// fails as it failed.
func (x *Exchange) Watch(res *http.Response, err error) (*http.Response, error) {
	if res == nil {
		return res, err
	}
	x.Status, x.Header = res.StatusCode, res.Header
	if res.Body == nil {
		return res, err
	}
	if x.Limit > 0 && res.ContentLength > x.Limit {
		res.Body.Close()
		x.ReadErr = x.TooLarge
		return nil, x.TooLarge
	}
	body := &watchedBody{rc: res.Body, x: x}
	res.Body = body
	x.first, x.last = -1, -1
	switch {
	case res.StatusCode >= 400:
		b, rerr := io.ReadAll(body)
		res.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		x.ErrBody = b[:min(len(b), ErrBodyLimit)]
		res.Body = io.NopCloser(bytes.NewReader(b))
	case strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"):
		body.sse = true
		res.Body = newBlankData(body)
	case res.ContentLength < 0 && x.Limit > 0:
		bufs, rerr := readBlocks(body)
		res.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		res.Body = io.NopCloser(&blocks{bufs: bufs})
	}
	return res, err
}

// Middleware records the exchange and bounds its body: Begin, then next,
// then Watch. It is a Stainless SDK's option.Middleware (x.Middleware).
func (x *Exchange) Middleware(r *http.Request, next Next) (*http.Response, error) {
	return x.Watch(next(x.Begin(r)))
}

// exchangeKey is the context key of a call's Exchange (WithExchange).
type exchangeKey struct{}

// WithExchange returns ctx carrying x for [CarriedMiddleware]: the SDK
// option that watches a call's exchange is then made once, not per call
// (one allocation a call where the option made four).
func WithExchange(ctx context.Context, x *Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// Carried returns the Exchange ctx carries ([WithExchange]), or nil.
func Carried(ctx context.Context) *Exchange {
	x, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return x
}

// CarriedMiddleware is the Middleware of the Exchange the request's
// context carries ([WithExchange]); a request without one passes as is.
func CarriedMiddleware(r *http.Request, next Next) (*http.Response, error) {
	if x := Carried(r.Context()); x != nil {
		return x.Middleware(r, next)
	}
	return next(r)
}

// Whole reports whether raw, the JSON value the SDK decoded from the body,
// is all the body held besides white space: a json.Decoder stops after the
// first value and ignores what follows it.
func (x *Exchange) Whole(raw string) bool {
	return x.first >= 0 && x.last-x.first+1 == int64(len(raw))
}

// watchedBody records the first read error of a response body, bounds it,
// and watches what it reads.
type watchedBody struct {
	rc  io.ReadCloser
	x   *Exchange
	sse bool   // an event stream: watch for "error:" lines, not JSON bounds
	end sseEnd // with sse: whether the stream ends inside an event
}

// Read reads at most one byte beyond the exchange's limit, and fails with
// TooLarge once the body has gone past it.
func (b *watchedBody) Read(p []byte) (int, error) {
	x := b.x
	if x.Limit > 0 && x.read > x.Limit {
		return 0, x.TooLarge
	}
	if left := x.Limit - x.read; x.Limit > 0 && int64(len(p)) > left {
		p = p[:left+1]
	}
	n, err := b.rc.Read(p)
	x.read += int64(n)
	if x.Limit > 0 && x.read > x.Limit {
		n, err = n-1, x.TooLarge
	}
	if n > 0 {
		b.watch(p[:n])
	}
	if err == io.EOF && b.sse && b.end.cut() {
		err = io.ErrUnexpectedEOF // the stream broke off inside an event
	}
	if err != nil && err != io.EOF && x.ReadErr == nil {
		x.ReadErr = err
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// watch feeds p, just read, to an event stream's watchers, or notes where a
// JSON body's value starts and ends (its first and last byte not white space).
func (b *watchedBody) watch(p []byte) {
	x := b.x
	if b.sse {
		if x.ErrorLines {
			x.ErrorLine.feed(p)
		}
		b.end.feed(p)
		return
	}
	const space = " \t\n\r"
	at := x.read - int64(len(p))
	if rest := bytes.TrimLeft(p, space); x.first < 0 && len(rest) > 0 {
		x.first = at + int64(len(p)-len(rest))
	}
	if kept := bytes.TrimRight(p, space); len(kept) > 0 {
		x.last = at + int64(len(kept)) - 1
	}
}

// readBlocks reads r to its end in blocks that grow to 1 MiB, so that the
// memory held is the bytes read, never twice that as with a doubling buffer.
func readBlocks(r io.Reader) ([][]byte, error) {
	var bufs [][]byte
	size := 4 << 10
	for {
		buf := make([]byte, 0, size)
		for len(buf) < cap(buf) {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				return append(bufs, buf), nil
			}
			if err != nil {
				return nil, err
			}
		}
		bufs = append(bufs, buf)
		size = min(size*4, 1<<20)
	}
}

// blocks reads a body that readBlocks read.
type blocks struct{ bufs [][]byte }

func (b *blocks) Read(p []byte) (int, error) {
	for len(b.bufs) > 0 && len(b.bufs[0]) == 0 {
		b.bufs = b.bufs[1:]
	}
	if len(b.bufs) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.bufs[0])
	b.bufs[0] = b.bufs[0][n:]
	return n, nil
}
