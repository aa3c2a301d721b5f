package openai

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3/option"
)

// exchange watches one HTTP exchange through an SDK middleware: whether the
// request was written, the response's status and headers, its error body,
// and any error while reading the body. The classifier needs all of them,
// which the SDK's errors do not carry.
type exchange struct {
	reached bool        // the SDK handed a request to the transport
	wrote   atomic.Bool // the transport finished writing the request
	status  int         // the response's status, 0 when none came
	header  http.Header // the response's headers
	errBody []byte      // the body of a response with status >= 400
	readErr error       // the first error reading the body, other than io.EOF
	limit   int64       // the most body bytes to read; 0 means no limit
	read    int64       // body bytes read so far
	sse     sseErrorLine
	// first and last are the offsets of the first and last bytes of a JSON
	// body that are not white space (-1: none yet), so that a value with
	// trailing data, which the SDK's json.Decoder ignores, is refused.
	first, last int64
}

// errBodyLimit bounds the bytes of an error body kept for classification:
// error objects are a few hundred bytes, and the rest is read and dropped.
const errBodyLimit = 64 << 10

// middleware is the SDK middleware (option.Middleware) recording the
// exchange. It bounds the body at the transport, before the SDK decodes it:
// a Content-Length above the limit is refused before a byte is read, an
// error body is read here (so that its raw form is kept), and a body of
// unknown length is read in blocks, so that refusing it costs the limit.
func (x *exchange) middleware(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	x.reached = true
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			x.wrote.Store(true)
		}
	}}
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), trace))
	res, err := next(r)
	if res == nil {
		return res, err
	}
	x.status, x.header = res.StatusCode, res.Header
	if res.Body == nil {
		return res, err
	}
	if x.limit > 0 && res.ContentLength > x.limit {
		res.Body.Close()
		x.readErr = ErrTooLarge
		return nil, ErrTooLarge
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
		x.errBody = b[:min(len(b), errBodyLimit)]
		res.Body = io.NopCloser(bytes.NewReader(b))
	case strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream"):
		body.sse = true
	case res.ContentLength < 0 && x.limit > 0:
		bufs, rerr := readBlocks(body)
		res.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		res.Body = io.NopCloser(&blocks{bufs: bufs})
	}
	return res, err
}

// watchedBody records the first read error of a response body and bounds it.
type watchedBody struct {
	rc  io.ReadCloser
	x   *exchange
	sse bool // an event stream: look for llama.cpp's "error:" lines
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
	if b.sse && n > 0 {
		x.sse.feed(p[:n])
	} else if n > 0 {
		at := x.read - int64(n)
		if x.first < 0 {
			if i := indexNonSpace(p[:n]); i >= 0 {
				x.first = at + int64(i)
			}
		}
		if i := lastNonSpace(p[:n]); i >= 0 {
			x.last = at + int64(i)
		}
	}
	if err != nil && err != io.EOF && x.readErr == nil {
		x.readErr = err
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// indexNonSpace returns the index of the first byte of p that is not JSON
// white space, or -1.
func indexNonSpace(p []byte) int {
	for i, c := range p {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return -1
}

// lastNonSpace returns the index of the last byte of p that is not JSON
// white space, or -1.
func lastNonSpace(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if c := p[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return -1
}

// whole reports whether the JSON value the SDK decoded, raw, is all the
// body held besides white space.
func (x *exchange) whole(raw string) bool {
	return x.first >= 0 && x.last-x.first+1 == int64(len(raw))
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

// sseErrorLine keeps the first "error:" line of an event stream, the field
// llama.cpp's server sends a failure in (tools/server/server.cpp,
// server_sent_event(sink, "error", ...)); the SDK's decoder drops fields
// other than event and data, so the adapter reads it off the wire.
type sseErrorLine struct {
	state uint8 // 0 at a line's start, 1 matching the prefix, 2 keeping, 3 skipping
	i     int
	line  []byte
	done  bool
}

const sseErrorPrefix = "error:"

func (s *sseErrorLine) feed(p []byte) {
	for len(p) > 0 && !s.done {
		switch s.state {
		case 0, 1:
			c := p[0]
			p = p[1:]
			switch {
			case c == sseErrorPrefix[s.i]:
				s.i++
				s.state = 1
				if s.i == len(sseErrorPrefix) {
					s.state = 2
				}
			case c == '\n' || c == '\r':
				s.state, s.i = 0, 0
			default:
				s.state, s.i = 3, 0
			}
		case 2:
			end := bytes.IndexAny(p, "\r\n")
			if end < 0 {
				end = len(p)
			} else {
				s.done = true
			}
			s.line = append(s.line, p[:min(end, errBodyLimit-len(s.line))]...)
			p = p[end:]
		case 3:
			end := bytes.IndexAny(p, "\r\n")
			if end < 0 {
				return
			}
			p = p[end+1:]
			s.state = 0
		}
	}
}

// get returns the line's value (without the prefix and one space), or nil.
func (s *sseErrorLine) get() []byte {
	if !s.done && s.state != 2 {
		return nil
	}
	return bytes.TrimPrefix(s.line, []byte(" "))
}
