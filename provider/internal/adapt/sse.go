package adapt

import "bytes"

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
