package fakecore

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Call is one request being answered, handed to the dialect. Its waits end
// when the client goes away or the server closes.
type Call struct {
	// W and R are the exchange.
	W http.ResponseWriter
	R *http.Request
	// Ctx ends when the client goes away or the server closes.
	Ctx context.Context
	// Fault is this request's fault (Kind NoFault: none).
	Fault Fault
	// Model and Stream are what Decode read.
	Model  string
	Stream bool

	s      *Server
	pacing Pacing
}

// Server returns the server answering the call.
func (c *Call) Server() *Server { return c.s }

// Sleep waits d, or until the client goes away or the server closes; it
// reports whether the wait completed. d <= 0 returns at once.
func (c *Call) Sleep(d time.Duration) bool {
	if d <= 0 {
		if c.Ctx.Err() != nil {
			c.abortIfClosing()
			return false
		}
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.Ctx.Done():
		c.abortIfClosing()
		return false
	}
}

// abortIfClosing drops the connection when the server is closing, so that a
// client whose request was interrupted by Close sees a transport error rather
// than an empty 200.
func (c *Call) abortIfClosing() {
	if c.s.ctx.Err() != nil {
		panic(http.ErrAbortHandler)
	}
}

// Stall waits the fault's Stall, or until the call ends when it is zero; it
// reports whether the call goes on.
func (c *Call) Stall() bool {
	if c.Fault.Stall <= 0 {
		<-c.Ctx.Done()
		c.abortIfClosing()
		return false
	}
	return c.Sleep(c.Fault.Stall)
}

// Abort drops the connection at once (net/http's ErrAbortHandler).
func (c *Call) Abort() {
	_ = http.NewResponseController(c.W).Flush()
	panic(http.ErrAbortHandler)
}

// Flush sends what was written so far.
func (c *Call) Flush() { _ = http.NewResponseController(c.W).Flush() }

// GenTime is how long generating n tokens takes after the first.
func (c *Call) GenTime(n int) time.Duration {
	if c.pacing.TokensPerSecond <= 0 || n <= 1 {
		return 0
	}
	return time.Duration(float64(n-1) / c.pacing.TokensPerSecond * float64(time.Second))
}

// ServeFault answers the faults that need no answer: FaultStatus (with
// errorBody(status) as its body unless Fault.Body is set) and, for a
// request that does not stream, FaultDisconnect. It reports whether it
// answered.
func (c *Call) ServeFault(errorBody func(status int) []byte) bool {
	switch c.Fault.Kind {
	case FaultStatus:
		status := cmp.Or(c.Fault.Status, http.StatusInternalServerError)
		body := []byte(c.Fault.Body)
		if c.Fault.Body == "" {
			body = errorBody(status)
		}
		c.Reply(status, body)
		return true
	case FaultDisconnect:
		if !c.Stream {
			panic(http.ErrAbortHandler)
		}
	}
	return false
}

// Reply writes a whole body with the fault's headers: retry-after,
// retry-after-ms, x-should-retry, then Fault.Header. Content-Type is
// application/json unless Fault.Header sets it.
func (c *Call) Reply(status int, body []byte) {
	h := c.W.Header()
	h.Set("Content-Type", "application/json")
	f := c.Fault
	if f.RetryAfterMsHeader > 0 {
		h.Set("retry-after-ms", strconv.FormatInt(f.RetryAfterMsHeader.Milliseconds(), 10))
	}
	if f.RetryAfter > 0 {
		if f.RetryAfterDate {
			h.Set("retry-after", time.Now().Add(f.RetryAfter).UTC().Format(http.TimeFormat))
		} else {
			h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(f.RetryAfter.Seconds())), 10))
		}
	}
	if f.ShouldRetry != "" {
		h.Set("x-should-retry", f.ShouldRetry)
	}
	for k, v := range f.Header {
		h[http.CanonicalHeaderKey(k)] = v
	}
	c.W.WriteHeader(status)
	_, _ = c.W.Write(body)
}

// Whole writes a 200 answer of the given tokens after TTFT and the
// generation time, applying FaultMalformed (the first half of the body
// only) and FaultStallMidStream (a stall after the first half).
func (c *Call) Whole(body []byte, tokens int) {
	if !c.Sleep(c.pacing.TTFT + c.GenTime(tokens)) {
		return
	}
	c.W.Header().Set("Content-Type", "application/json")
	c.W.WriteHeader(http.StatusOK)
	switch c.Fault.Kind {
	case FaultMalformed:
		_, _ = c.W.Write(body[:len(body)/2])
		return
	case FaultStallMidStream:
		_, _ = c.W.Write(body[:len(body)/2])
		c.Flush()
		if !c.Stall() {
			return
		}
		_, _ = c.W.Write(body[len(body)/2:])
		return
	}
	_, _ = c.W.Write(body)
}

// Waiting is how a dialect writes what a stream sends while it waits its
// TTFT (Pacing.ThinkEvery, Pacing.KeepAliveEvery), in its provider's
// format. A nil function sends nothing.
type Waiting struct {
	// Think writes the i-th reasoning event (from 0).
	Think func(i int)
	// KeepAlive writes one keep-alive.
	KeepAlive func()
}

// BeginStream writes the headers of an event stream and waits TTFT,
// thinking or keeping alive meanwhile as the model's Pacing says with w;
// it reports whether the call goes on and how many reasoning events it
// sent.
func (c *Call) BeginStream(w Waiting) (thoughts int, ok bool) {
	h := c.W.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	c.W.WriteHeader(http.StatusOK)
	c.Flush()
	every, tick := c.pacing.ThinkEvery, func(i int) {
		if w.Think != nil {
			w.Think(i)
			thoughts++
		}
	}
	if every <= 0 {
		every, tick = c.pacing.KeepAliveEvery, func(int) {
			if w.KeepAlive != nil {
				w.KeepAlive()
			}
		}
	}
	if every <= 0 {
		return 0, c.Sleep(c.pacing.TTFT)
	}
	for i, t := 0, time.Duration(0); t < c.pacing.TTFT; i, t = i+1, t+every {
		tick(i)
		if !c.Sleep(min(every, c.pacing.TTFT-t)) {
			return thoughts, false
		}
	}
	return thoughts, true
}

// Comment writes an event stream's comment line (": text" and a blank
// line), the keep-alive of servers and proxies that send one (WHATWG HTML,
// "Interpreting an event stream": a line starting with a colon is
// ignored).
func (c *Call) Comment(text string) {
	_, _ = c.W.Write([]byte(": " + text + "\n\n"))
	c.Flush()
}

// Events sends n content events with send(i), 1/TokensPerSecond apart, and
// strikes the fault's mid-stream fault before event Fault.AfterChunks (or
// after the last when n <= AfterChunks): a stall, a disconnect, the
// dialect's malformed event (Dialect.MalformedEvent), or the error event
// whose data is Fault.Body or errorData(). It reports whether the stream
// goes on.
func (c *Call) Events(n int, send func(i int), errorData func() []byte) bool {
	var gap time.Duration
	if tps := c.pacing.TokensPerSecond; tps > 0 {
		gap = time.Duration(float64(time.Second) / tps)
	}
	for i := range n {
		if i == c.Fault.AfterChunks && !c.midStream(errorData) {
			return false
		}
		if i > 0 && !c.Sleep(gap) {
			return false
		}
		send(i)
		if c.Ctx.Err() != nil {
			return false
		}
	}
	return n > c.Fault.AfterChunks || c.midStream(errorData)
}

// midStream injects the mid-stream fault; it reports whether the stream
// goes on.
func (c *Call) midStream(errorData func() []byte) bool {
	switch c.Fault.Kind {
	case FaultStallMidStream:
		return c.Stall()
	case FaultMalformed:
		c.Event(c.s.malformed())
		return false
	case FaultStreamError:
		data := []byte(c.Fault.Body)
		if c.Fault.Body == "" {
			data = errorData()
		}
		c.Event(c.Fault.Event, data)
		return false
	case FaultDisconnect:
		c.Abort()
	}
	return true
}

// Event writes one server-sent event (with an "event:" line when name is
// not empty) and flushes it.
func (c *Call) Event(name string, data []byte) {
	buf := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, _ = c.W.Write(buf)
	c.Flush()
}
