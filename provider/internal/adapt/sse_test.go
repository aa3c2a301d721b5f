package adapt

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// dropBlankData is blankData's reference: the input split into lines, less
// those that are "data", or "data:" and blanks, with their line end; a last
// line without an end is kept as it is. A line that starts with a colon is
// dropped up to its end, a line feed, a carriage return, or both, or the
// input's end.
func dropBlankData(in string) string {
	var out strings.Builder
	for len(in) > 0 {
		if in[0] == ':' {
			i := strings.IndexAny(in, "\r\n")
			if i < 0 {
				break
			}
			cr := in[i] == '\r'
			in = in[i+1:]
			if cr {
				in = strings.TrimPrefix(in, "\n")
			}
			continue
		}
		line, rest, found := strings.Cut(in, "\n")
		in = rest
		if !found {
			out.WriteString(line)
			break
		}
		body := strings.TrimSuffix(line, "\r")
		if blank := body == "data" || strings.HasPrefix(body, "data:") && strings.Trim(body[5:], " \t") == ""; blank && len(line) <= maxHeld {
			continue
		}
		out.WriteString(line + "\n")
	}
	return out.String()
}

// readAll reads in through blankData, the source yielding chunk bytes at a
// time (0: at once), and p of size bufSize.
func readAll(t *testing.T, in string, chunk, bufSize int) string {
	t.Helper()
	var src io.Reader = strings.NewReader(in)
	if chunk > 0 {
		src = &chunked{in: []byte(in), n: chunk}
	}
	b := newBlankData(io.NopCloser(src))
	var out bytes.Buffer
	p := make([]byte, bufSize)
	for range 10 * (len(in) + 2) {
		n, err := b.Read(p)
		out.Write(p[:n])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
	t.Fatalf("no EOF after %d reads", 10*(len(in)+2))
	return ""
}

type chunked struct {
	in []byte
	n  int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.in)
	c.in = c.in[k:]
	return k, nil
}

// Blank data lines, the keep-alives of some proxies (netease-lcap/wave-agent#1326,
// Growth-Circle/cadis#2329) and the empty data of a ping event, are dropped,
// whatever the reads' sizes; every other byte passes as it came.
func TestBlankData(t *testing.T) {
	const ev = "data: {\"a\":1}\n\n"
	for _, c := range []struct{ in, want string }{
		{ev, ev},
		{ev + "data: \n\n" + ev, ev + "\n" + ev},
		{ev + "data:\n\ndata\n\n" + ev, ev + "\n\n" + ev},
		{"event: ping\ndata: \n\n" + ev, "event: ping\n\n" + ev},
		{"data: \r\n\r\n" + ev, "\r\n" + ev},
		{"data:  \t \n" + ev, ev},
		{"data: {\"a\":\ndata: \ndata: 1}\n\n", "data: {\"a\":\ndata: 1}\n\n"},
		{"data \n\n", "data \n\n"}, // the field "data ", which decoders ignore
		{"datum: 1\n\n", "datum: 1\n\n"},
		{"dat", "dat"},
		{"data:", "data:"}, // a last line without its end stays
		{"data: x\rdata:\n", "data: x\rdata:\n"},
		{"data:" + strings.Repeat(" ", 40) + "\n", "data:" + strings.Repeat(" ", 40) + "\n"}, // past maxHeld: passed
		{": keep-alive\n\n" + ev, "\n" + ev},
		{": OPENROUTER PROCESSING\r\n\r\n" + ev, "\r\n" + ev},
		{": a\r: b\rdata: {\"a\":1}\r\r", "data: {\"a\":1}\r\r"},
		{"data: {\"a\":\n: inside\ndata: 1}\n\n", "data: {\"a\":\ndata: 1}\n\n"},
		{": no end", ""},
		{"x: 1\n:\n", "x: 1\n"},
		{"", ""},
	} {
		if ref := dropBlankData(c.in); ref != c.want {
			t.Fatalf("reference(%q) = %q, want %q", c.in, ref, c.want)
		}
		for _, chunk := range []int{0, 1, 2, 3, 5} {
			for _, size := range []int{1, 2, 7, 4096} {
				if got := readAll(t, c.in, chunk, size); got != c.want {
					t.Errorf("blankData(%q), chunks of %d, reads of %d = %q, want %q", c.in, chunk, size, got, c.want)
				}
			}
		}
	}
}

// A source's error reaches the reader once what was read before it did.
func TestBlankDataError(t *testing.T) {
	b := newBlankData(io.NopCloser(iotest.TimeoutReader(strings.NewReader("data: 1\n\ndata: 2\n\n"))))
	got, err := io.ReadAll(b)
	if string(got) != "data: 1\n\ndata: 2\n\n" || err != iotest.ErrTimeout {
		t.Errorf("ReadAll = %q, %v; want the first read's bytes, then %v", got, err, iotest.ErrTimeout)
	}
}

// FuzzBlankData: any stream, read in any sizes, comes out as the reference
// says.
func FuzzBlankData(f *testing.F) {
	for _, s := range []string{"data: \n\ndata: {}\n\n", "event: ping\ndata:\r\n\r\n", "data\n", "dat", "data:" + strings.Repeat(" ", 31) + "\n"} {
		f.Add(s, uint8(1), uint8(3))
	}
	f.Fuzz(func(t *testing.T, in string, chunk, size uint8) {
		if got, want := readAll(t, in, int(chunk%16), int(size%64)+1), dropBlankData(in); got != want {
			t.Errorf("blankData(%q), chunks of %d, reads of %d = %q, want %q", in, chunk%16, size%64+1, got, want)
		}
	})
}

// Each read gives the lines the network delivered at once, without waiting
// for the next write: an event ending a write (behind a blank data line,
// and before the start of a line that may be one) reaches the SDK's
// decoder as it came. Close ends a read waiting for the network.
func TestBlankDataDoesNotWait(t *testing.T) {
	pr, pw := io.Pipe()
	b := newBlankData(pr)
	p := make([]byte, 4096)
	for _, c := range []struct{ write, want string }{
		{"data: {\"a\":1}\n\n", "data: {\"a\":1}\n\n"},
		{"data: \n\ndata: {\"a\":2}\n\ndata", "\ndata: {\"a\":2}\n\n"},
		{": {\"a\":3}\n\n", "data: {\"a\":3}\n\n"},
		{"data:\r\n\r\n", "\r\n"},
	} {
		go func() { _, _ = pw.Write([]byte(c.write)) }()
		var got []byte
		for len(got) < len(c.want) {
			n, err := b.Read(p)
			if err != nil {
				t.Fatalf("after writing %q: Read = %q, %v", c.write, p[:n], err)
			}
			got = append(got, p[:n]...)
		}
		if string(got) != c.want {
			t.Errorf("after writing %q: read %q, want %q", c.write, got, c.want)
		}
	}
	done := make(chan error)
	go func() {
		_, err := b.Read(p)
		done <- err
	}()
	b.Close()
	if err := <-done; err != io.ErrClosedPipe {
		t.Errorf("Read across Close = %v, want %v", err, io.ErrClosedPipe)
	}
}

// FuzzWatchEventStream: an event stream read through Watch is bounded on
// the bytes the network sent, blank data lines included: past Limit the
// reader gets the first Limit bytes less their blank data lines, then
// TooLarge, also recorded as ReadErr; the "error:" line is found in what
// was sent, a blank data line before it or not. Within Limit, a stream
// that ends inside an event (cutRef) ends in io.ErrUnexpectedEOF, also
// recorded as ReadErr.
func FuzzWatchEventStream(f *testing.F) {
	f.Add("data: \n\ndata: {}\n\nerror: x\n\n", uint16(12), uint8(3))
	f.Add("event: ping\ndata:\r\n\r\ndata: [DONE]\n\n", uint16(200), uint8(0))
	f.Fuzz(func(t *testing.T, in string, limit uint16, chunk uint8) {
		x := &Exchange{Limit: int64(limit%256) + 1, TooLarge: errTooLarge, ErrorLines: true}
		var src io.Reader = strings.NewReader(in)
		if chunk%8 > 0 {
			src = &chunked{in: []byte(in), n: int(chunk % 8)}
		}
		res, err := x.Watch(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(src), ContentLength: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		sent, wantErr := in, error(nil)
		if int64(len(in)) > x.Limit {
			sent, wantErr = in[:x.Limit], errTooLarge
		}
		if wantErr == nil && cutRef(in) {
			wantErr = io.ErrUnexpectedEOF
		}
		if string(got) != dropBlankData(sent) || err != wantErr || x.ReadErr != wantErr {
			t.Errorf("Watch(%q), Limit %d: read %q, %v (ReadErr %v); want %q, %v", in, x.Limit, got, err, x.ReadErr, dropBlankData(sent), wantErr)
		}
		var want SSEErrorLine
		want.feed([]byte(sent))
		if g, w := x.ErrorLine.Get(), want.Get(); !bytes.Equal(g, w) {
			t.Errorf("Watch(%q), Limit %d: ErrorLine %q, want %q", in, x.Limit, g, w)
		}
	})
}

// cutRef is sseEnd's reference: in split into lines (at CRLF, LF or CR),
// in ends inside an event when its last line has no end and is not a
// comment, or when a data line with a non-blank byte after "data:" comes
// after the last blank line.
func cutRef(in string) bool {
	var lines []string
	ended := true
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines, ended = append(lines, in), false
			break
		}
		lines = append(lines, in[:i])
		if strings.HasPrefix(in[i:], "\r\n") {
			i++
		}
		in = in[i+1:]
	}
	if !ended && !strings.HasPrefix(lines[len(lines)-1], ":") {
		return true
	}
	pending := false
	for _, l := range lines {
		switch {
		case l == "":
			pending = false
		case strings.HasPrefix(l, "data:") && strings.Trim(l[5:], " \t") != "":
			pending = true
		}
	}
	return pending
}

// TestWatchCutEventStream: an event stream that ends inside an event, its
// last event holding data without its blank line or its last line without
// its end, broke off: the reader gets its bytes, then io.ErrUnexpectedEOF,
// also ReadErr (which the adapters classify Ambiguous, a body cut off).
// One that ends at an event's end, or after keep-alives, ends in io.EOF.
func TestWatchCutEventStream(t *testing.T) {
	const ev = "data: {\"a\":1}\n\n"
	for _, c := range []struct {
		in  string
		cut bool
	}{
		{ev, false}, {ev + "data: [DONE]\n\n", false}, {"data: {\"a\":1}\r\n\r\n", false}, {"data: 1\r\r", false},
		{ev + ": keep-alive\n", false}, {ev + ": keep-alive", false}, {ev + "data:\n", false}, {ev + "event: ping\n", false}, {"", false},
		{ev + "data: {\"choices\":[],\"usage\":{\"prompt_tok", true}, {ev + "data: {\"a\":2}\n", true}, {ev + "data: {\"a\":2}\r\n", true},
		{ev + "data", true}, {ev + "event: message_st", true}, {"data: 1\r", true},
	} {
		if ref := cutRef(c.in); ref != c.cut {
			t.Fatalf("cutRef(%q) = %v, want %v", c.in, ref, c.cut)
		}
		want := error(nil)
		if c.cut {
			want = io.ErrUnexpectedEOF
		}
		for _, chunk := range []int{0, 1, 3} {
			x := &Exchange{}
			var src io.Reader = strings.NewReader(c.in)
			if chunk > 0 {
				src = &chunked{in: []byte(c.in), n: chunk}
			}
			res, err := x.Watch(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(src), ContentLength: -1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(res.Body)
			if string(got) != dropBlankData(c.in) || err != want || x.ReadErr != want {
				t.Errorf("Watch(%q), chunks of %d: read %q, %v (ReadErr %v); want %q, %v", c.in, chunk, got, err, x.ReadErr, dropBlankData(c.in), want)
			}
		}
	}
}
