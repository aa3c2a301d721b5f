package adapt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

var errTooLarge = errors.New("test: response larger than the limit")

// response is a response with body b, of unknown length unless sized.
func response(status int, contentType, b string, sized bool) *http.Response {
	res := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(b)), ContentLength: -1}
	if sized {
		res.ContentLength = int64(len(b))
	}
	return res
}

// closeRecorder records whether the body was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// A Content-Length past the limit is refused before a byte is read, and
// the body is closed.
func TestWatchRefusesContentLength(t *testing.T) {
	body := &closeRecorder{Reader: strings.NewReader(strings.Repeat("a", 11))}
	x := &Exchange{Limit: 10, TooLarge: errTooLarge}
	res, err := x.Watch(&http.Response{StatusCode: 200, Header: http.Header{}, Body: body, ContentLength: 11}, nil)
	if res != nil || err != errTooLarge || x.ReadErr != errTooLarge || !body.closed || x.Status != 200 {
		t.Errorf("Watch = %v, %v; ReadErr %v, closed %v, status %d; want nil, TooLarge, TooLarge, closed, 200", res, err, x.ReadErr, body.closed, x.Status)
	}
}

// The body is read up to the limit exactly; one byte more fails with
// TooLarge, and later reads too, however it is sized and read.
func TestWatchBound(t *testing.T) {
	for _, c := range []struct {
		name        string
		contentType string
		sized       bool
	}{{"json chunked", "application/json", false}, {"event stream", "text/event-stream", false}, {"error body", "application/json", false}} {
		for _, n := range []int{9, 10, 11, 5000} {
			status := 200
			if c.name == "error body" {
				status = 500
			}
			x := &Exchange{Limit: 10, TooLarge: errTooLarge}
			body := strings.Repeat("a", n)
			if c.name == "event stream" {
				body = strings.Repeat("a", n-2) + "\n\n" // ends at an event's end (a cut is TestWatchCutEventStream's)
			}
			res, err := x.Watch(response(status, c.contentType, body, c.sized), nil)
			var b []byte
			if err == nil {
				b, err = io.ReadAll(iotest.OneByteReader(res.Body))
			}
			if n <= 10 && (err != nil || len(b) != n || x.ReadErr != nil) {
				t.Errorf("%s, %d bytes: read %d, %v (ReadErr %v); want all, nil", c.name, n, len(b), err, x.ReadErr)
			}
			if n > 10 && (!errors.Is(err, errTooLarge) || !errors.Is(x.ReadErr, errTooLarge) || len(b) > 10) {
				t.Errorf("%s, %d bytes: read %d, %v (ReadErr %v); want at most 10, TooLarge", c.name, n, len(b), err, x.ReadErr)
			}
		}
	}
}

// No limit reads everything.
func TestWatchNoLimit(t *testing.T) {
	x := &Exchange{}
	res, _ := x.Watch(response(200, "application/json", strings.Repeat("a", 100000), false), nil)
	if b, err := io.ReadAll(res.Body); err != nil || len(b) != 100000 {
		t.Errorf("read %d, %v; want 100000, nil", len(b), err)
	}
}

// An error body is kept as sent, at most ErrBodyLimit bytes of it, and the
// SDK still reads all of it.
func TestWatchErrorBody(t *testing.T) {
	long := `{"error":"` + strings.Repeat("x", ErrBodyLimit) + `"}`
	x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge}
	res, err := x.Watch(response(429, "application/json", long, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil || string(b) != long || string(x.ErrBody) != long[:ErrBodyLimit] || x.Status != 429 {
		t.Errorf("SDK read %d bytes, %v; ErrBody %d bytes, status %d; want %d, nil, %d, 429", len(b), err, len(x.ErrBody), x.Status, len(long), ErrBodyLimit)
	}
}

// A body that breaks off while the Exchange reads it fails as it failed,
// and the error is kept.
func TestWatchCutBody(t *testing.T) {
	for _, status := range []int{200, 503} {
		x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge}
		res := response(status, "application/json", "", false)
		res.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"a":`), iotest.ErrReader(io.ErrUnexpectedEOF)))
		got, err := x.Watch(res, nil)
		if got != nil || err != io.ErrUnexpectedEOF || x.ReadErr != io.ErrUnexpectedEOF {
			t.Errorf("status %d: Watch = %v, %v (ReadErr %v); want nil, unexpected EOF", status, got, err, x.ReadErr)
		}
	}
}

// A body of unknown length is read in blocks of at most 1 MiB, and replayed
// whole.
func TestWatchBlocks(t *testing.T) {
	want := strings.Repeat("0123456789", 300_000) // 3 MB
	x := &Exchange{Limit: 64 << 20, TooLarge: errTooLarge}
	res, err := x.Watch(response(200, "application/json", want, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if x.read != int64(len(want)) {
		t.Errorf("the Exchange read %d bytes before the SDK, want all %d", x.read, len(want))
	}
	b, err := io.ReadAll(res.Body)
	if err != nil || string(b) != want {
		t.Errorf("replayed %d bytes, %v; want %d, nil", len(b), err, len(want))
	}
	bufs, _ := readBlocks(strings.NewReader(want))
	for i, buf := range bufs {
		if cap(buf) > 1<<20 {
			t.Errorf("block %d holds %d bytes, want at most 1 MiB", i, cap(buf))
		}
	}
}

// Whole is true when the decoded value is all the body held but white
// space, however the body was read, and false when anything follows it.
func TestWhole(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"a":1}`, true},
		{" \r\n\t{\"a\": [1, 2]}\n\n", true},
		{`{"a":1} {"b":2}`, false},
		{`{"a":1}x`, false},
		{`[1]` + strings.Repeat(" ", 9000) + `1`, false},
		{`"s"`, true},
	} {
		for _, sized := range []bool{true, false} {
			x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge}
			res, err := x.Watch(response(200, "application/json", c.body, sized), nil)
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if err := json.NewDecoder(iotest.HalfReader(res.Body)).Decode(&raw); err != nil {
				t.Fatalf("%q: %v", c.body, err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			if got := x.Whole(string(raw)); got != c.want {
				t.Errorf("%q (sized %v): Whole = %v, want %v", c.body, sized, got, c.want)
			}
		}
	}
	if (&Exchange{}).Whole("") {
		t.Errorf("Whole of an exchange without a body = true, want false")
	}
}

// An event stream is watched for "error:" lines only when asked, and never
// for JSON bounds.
func TestWatchEventStream(t *testing.T) {
	const stream = "data: {\"a\":1}\n\nerror: {\"code\":500}\n\n"
	for _, lines := range []bool{false, true} {
		x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge, ErrorLines: lines}
		res, err := x.Watch(response(200, "text/event-stream; charset=utf-8", stream, false), nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(res.Body); err != nil || string(b) != stream {
			t.Fatalf("read %q, %v; want the stream", b, err)
		}
		want := ""
		if lines {
			want = `{"code":500}`
		}
		if got := string(x.ErrorLine.Get()); got != want || x.first != -1 {
			t.Errorf("ErrorLines %v: ErrorLine = %q, first %d; want %q, -1", lines, got, x.first, want)
		}
	}
}

// Watch passes a transport error through, and a response without a body.
func TestWatchPassesThrough(t *testing.T) {
	x := &Exchange{Limit: 10, TooLarge: errTooLarge}
	boom := errors.New("boom")
	if res, err := x.Watch(nil, boom); res != nil || err != boom || x.Status != 0 {
		t.Errorf("Watch(nil, boom) = %v, %v, status %d; want nil, boom, 0", res, err, x.Status)
	}
	res := &http.Response{StatusCode: 204, Header: http.Header{"A": {"b"}}}
	if got, err := x.Watch(res, nil); got != res || err != nil || x.Status != 204 || x.Header.Get("A") != "b" {
		t.Errorf("Watch(204 without body) = %v, %v, status %d; want it as is", got, err, x.Status)
	}
}

// Begin marks the request as reached, and the transport marks it written
// once it wrote it; a request the transport could not write stays unwritten.
func TestBeginWrote(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "{}") }))
	defer s.Close()
	x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge}
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader("{}"))
	res, err := x.Watch(s.Client().Transport.RoundTrip(x.Begin(req)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if !x.Reached || !x.Wrote() || x.Status != 200 {
		t.Errorf("Reached %v, Wrote %v, status %d; want true, true, 200", x.Reached, x.Wrote(), x.Status)
	}

	x = &Exchange{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, s.URL, strings.NewReader("{}"))
	if _, err := x.Watch(s.Client().Transport.RoundTrip(x.Begin(req))); err == nil || !x.Reached || x.Wrote() {
		t.Errorf("canceled request: err %v, Reached %v, Wrote %v; want an error, true, false", err, x.Reached, x.Wrote())
	}
}

// The "error:" line detector finds llama.cpp's line however the bytes are
// split, and nothing in lines that only contain the word.
func TestSSEErrorLine(t *testing.T) {
	const stream = "data: {\"x\":\"error: no\"}\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\ndata: [DONE]\n\n"
	for split := 1; split <= len(stream); split++ {
		var s SSEErrorLine
		for i := 0; i < len(stream); i += split {
			s.feed([]byte(stream[i:min(i+split, len(stream))]))
		}
		if got := string(s.Get()); got != `{"code":500,"message":"boom"}` {
			t.Fatalf("split %d: Get() = %q, want the error line's value", split, got)
		}
	}
	var s SSEErrorLine
	s.feed([]byte("data: error: x\n\nxerror: y\n"))
	if got := s.Get(); got != nil {
		t.Errorf("Get() = %q, want nil for no error line", got)
	}
	var long SSEErrorLine
	long.feed([]byte("error: " + strings.Repeat("x", 2*ErrBodyLimit) + "\n"))
	if got := len(long.Get()); got != ErrBodyLimit-1 {
		t.Errorf("a long error line keeps %d bytes, want %d", got, ErrBodyLimit-1)
	}
}

// FuzzWhole: for any body that begins with a JSON value, Whole says whether
// nothing but white space follows it, whatever the read sizes.
func FuzzWhole(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":1}{}`, `[1,2] x`, `"x"` + "\n", `1 2`} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, body string, chunk uint8) {
		var raw json.RawMessage
		dec := json.NewDecoder(strings.NewReader(body))
		if dec.Decode(&raw) != nil {
			t.Skip()
		}
		rest := body[dec.InputOffset():]
		want := strings.Trim(rest, " \t\r\n") == ""
		x := &Exchange{Limit: 1 << 20, TooLarge: errTooLarge}
		res, err := x.Watch(response(200, "application/json", body, chunk%2 == 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		n := int(chunk%16) + 1
		var got bytes.Buffer
		buf := make([]byte, n)
		for {
			k, err := res.Body.Read(buf)
			got.Write(buf[:k])
			if err != nil {
				break
			}
		}
		if got.String() != body {
			t.Fatalf("replayed %q, want %q", got.String(), body)
		}
		if x.Whole(string(bytes.TrimSpace(raw))) != want {
			t.Errorf("Whole(%q) of body %q = %v, want %v (rest %s)", raw, body, !want, want, strconv.Quote(rest))
		}
	})
}
