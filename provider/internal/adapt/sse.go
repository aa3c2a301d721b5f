package adapt

import (
	"bytes"
	"io"
)

// SSEErrorLine keeps the first "error:" line of an event stream, the field
// llama.cpp's server sends a failure in (tools/server/server.cpp,
// server_sent_event(sink, "error", ...)); SDK decoders drop fields other
// than event and data, so the adapter reads it off the wire. The zero value
// is ready; it keeps at most ErrBodyLimit bytes of the line.
type SSEErrorLine struct {
	state uint8 // 0 at a line's start, 1 matching the prefix, 2 keeping, 3 skipping
	i     int
	line  []byte
	done  bool
}

const sseErrorPrefix = "error:"

func (s *SSEErrorLine) feed(p []byte) {
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
			s.line = append(s.line, p[:min(end, ErrBodyLimit-len(s.line))]...)
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

// Get returns the line's value (without the prefix and one space), or nil
// when the stream had no "error:" line.
func (s *SSEErrorLine) Get() []byte {
	if !s.done && s.state != 2 {
		return nil
	}
	return bytes.TrimPrefix(s.line, []byte(" "))
}

// blankData passes an event stream on without its comment lines (a line
// that starts with a colon, ": keep-alive", the keep-alive of OpenRouter
// and of proxies) and its data lines that hold nothing but blanks
// ("data:", "data: ", "data"): proxies send those as keep-alives too. The
// format ignores a comment line, which genai's decoder takes for an
// invalid chunk and fails the stream on; the SDKs' other decoders drop
// it as blankData does. A keep-alive so never reaches an adapter, which
// reports no progress for it. The event-stream format (WHATWG HTML, "Interpreting an
// event stream") dispatches such a line alone as an event with empty
// data, which openai-go's decoder passes on as a line feed and genai's as
// nothing, and JSON decoding fails on either; no API gives an event
// without data a meaning, so blankData drops those events. A JSON event
// loses nothing: its data lines are joined by line feeds, which are white
// space. It holds back at most maxHeld bytes of a line that may be such a
// line, and reads its source in blocks of blankBlock bytes.
type blankData struct {
	src      io.ReadCloser
	buf      []byte // read from src and not yet filtered: buf[r:w]
	r, w     int
	st       uint8 // where the current line is (see the st constants)
	held     [maxHeld]byte
	nheld    int   // bytes of the line held back in held
	flush    int   // held[flush:nheld] is owed to the reader, when flushing
	flushing bool  // held bytes are owed before anything else
	err      error // src's, once buf is drained
}

const (
	maxHeld    = 32
	blankBlock = 4 << 10
)

// The states of blankData: at a line's start; matching "data" (st > 0:
// that many bytes matched); after "data:" and blanks; after them and a
// carriage return; passing the rest of a line; dropping a comment line;
// after a comment line's carriage return, which a line feed may follow.
const (
	stStart     uint8 = 0 // 1 to 4: "data"[:st] matched
	stBlank     uint8 = 5
	stCR        uint8 = 6
	stPass      uint8 = 7
	stComment   uint8 = 8
	stCommentCR uint8 = 9
)

func newBlankData(src io.ReadCloser) *blankData { return &blankData{src: src} }

func (b *blankData) Close() error { return b.src.Close() }

// Read fills p with the stream's next bytes, filtered.
func (b *blankData) Read(p []byte) (int, error) {
	n := 0
	for n == 0 && len(p) > 0 {
		if b.r == b.w {
			if b.err != nil {
				if b.nheld > 0 && !b.flushing { // a last line without its end: as it was
					b.flushing, b.flush = true, 0
				}
				if !b.flushing {
					return 0, b.err
				}
			} else {
				if b.buf == nil {
					b.buf = make([]byte, blankBlock)
				}
				m, err := b.src.Read(b.buf)
				b.r, b.w, b.err = 0, m, err
			}
		}
		n = b.filter(p)
	}
	return n, nil
}

// filter moves what it can of buf[r:w] (and of the held bytes owed) to p
// and returns how many bytes it wrote.
func (b *blankData) filter(p []byte) int {
	n := 0
	for n < len(p) {
		switch {
		case b.flushing:
			n += b.flushHeld(p[n:])
		case b.r == b.w:
			return n
		case b.st == stPass:
			n += b.pass(p[n:])
		case b.st == stComment, b.st == stCommentCR, b.st == stStart && b.buf[b.r] == ':':
			b.comment()
		default:
			b.blank(b.buf[b.r])
		}
	}
	return n
}

// flushHeld copies to p what it can of the held bytes owed, and returns how
// many it copied.
func (b *blankData) flushHeld(p []byte) int {
	k := copy(p, b.held[b.flush:b.nheld])
	if b.flush += k; b.flush == b.nheld {
		b.flushing, b.nheld, b.flush = false, 0, 0
	}
	return k
}

// pass copies to p what it can of the rest of the line, and returns how many
// bytes it copied.
func (b *blankData) pass(p []byte) int {
	end, st := b.w, stPass
	if i := bytes.IndexByte(b.buf[b.r:b.w], '\n'); i >= 0 {
		end, st = b.r+i+1, stStart
	}
	k := copy(p, b.buf[b.r:end])
	if b.r += k; b.r == end {
		b.st = st
	}
	return k
}

// comment drops a comment line: its colon, its text, and its end (a line
// feed after its carriage return too).
func (b *blankData) comment() {
	switch b.st {
	case stStart:
		b.r++
		b.st = stComment
	case stComment:
		i := bytes.IndexAny(b.buf[b.r:b.w], "\r\n")
		if i < 0 {
			b.r = b.w
			return
		}
		b.st = stStart
		if b.buf[b.r+i] == '\r' {
			b.st = stCommentCR
		}
		b.r += i + 1
	case stCommentCR:
		if b.buf[b.r] == '\n' {
			b.r++
		}
		b.st = stStart
	}
}

// blank reads c on a line that may be a blank data line ("data:", blanks,
// its end), holding its bytes (st is stStart to stCR): the line's end drops
// them; a byte no such line has passes them on, then the line from c.
func (b *blankData) blank(c byte) {
	room := b.nheld < maxHeld
	switch {
	case b.st < stBlank && c == "data:"[b.st]:
		b.hold(c, b.st+1) // "data:" moves to stBlank
	case b.st == stBlank && (c == ' ' || c == '\t') && room:
		b.hold(c, stBlank)
	case b.st >= 4 && b.st < stCR && c == '\r' && room:
		b.hold(c, stCR)
	case b.st >= 4 && c == '\n':
		b.r++
		b.nheld, b.st = 0, stStart
	default:
		b.st = stPass
		b.flushing, b.flush = b.nheld > 0, 0
	}
}

// hold keeps c, read, among the held bytes, and moves to state st.
func (b *blankData) hold(c byte, st uint8) {
	b.held[b.nheld] = c
	b.nheld++
	b.r++
	b.st = st
}

// sseEnd follows an event stream's lines, as the bytes came, to tell at
// its end whether it broke off inside an event (cut): the event-stream
// format (WHATWG HTML, "Interpreting an event stream") dispatches an event
// at a blank line and discards, at the end of the stream, one that has
// none, and the SDKs' decoders do so without an error. A stream whose last
// event holding data never got its blank line, or whose last line has no
// end, lost what the server was sending: the body broke off, as a
// connection cut mid-body does. Comment lines and blank data lines, the
// keep-alives blankData drops, hold no data. The zero value is at a
// stream's start.
type sseEnd struct {
	line    int     // bytes of the current line so far
	prefix  [5]byte // its first five
	data    bool    // it is a data line with a non-blank byte after "data:"
	comment bool    // it starts with a colon
	cr      bool    // the last byte was a carriage return (a line feed may follow)
	pending bool    // an event holding data awaits its blank line
}

func (s *sseEnd) feed(p []byte) {
	for _, c := range p {
		if c == '\n' && s.cr { // the second half of a CRLF
			s.cr = false
			continue
		}
		s.cr = c == '\r'
		if c == '\n' || c == '\r' {
			if s.line == 0 {
				s.pending = false // a blank line dispatches the event
			} else if s.data {
				s.pending = true
			}
			s.line, s.data, s.comment = 0, false, false
			continue
		}
		s.comment = s.comment || s.line == 0 && c == ':'
		if s.line < len(s.prefix) {
			s.prefix[s.line] = c
		} else if c != ' ' && c != '\t' && string(s.prefix[:]) == "data:" {
			s.data = true
		}
		s.line++
	}
}

// cut reports whether the stream fed so far ends inside an event: one
// holding data without its blank line, or a line without its end (a
// comment's excepted).
func (s *sseEnd) cut() bool { return s.pending || s.line > 0 && !s.comment }
