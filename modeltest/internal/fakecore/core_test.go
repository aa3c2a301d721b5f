package fakecore_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico/modeltest/internal/fakecore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plain is a toy dialect: POST /gen with {"model":..,"stream":..,"n":..}
// answers n tokens "t0 t1 ..." as one body or as n data events then "end".
type plainReq struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	N      int    `json:"n"`
}

var plain = fakecore.Dialect[plainReq]{
	Name: "fakeplain",
	Route: func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/gen" {
			http.Error(w, "no route", http.StatusNotFound)
			return false
		}
		return true
	},
	Decode: func(_ *http.Request, body []byte) (string, bool, plainReq, error) {
		var req plainReq
		err := json.Unmarshal(body, &req)
		return req.Model, req.Stream, req, err
	},
	BadRequest:   func(c *fakecore.Call, err error) { c.Reply(http.StatusBadRequest, []byte("bad")) },
	UnknownModel: func(c *fakecore.Call) { c.Reply(http.StatusNotFound, []byte("unknown")) },
	Serve: func(c *fakecore.Call, req plainReq) {
		if c.ServeFault(func(status int) []byte { return []byte("error " + strconv.Itoa(status)) }) {
			return
		}
		if !c.Stream {
			var b strings.Builder
			for i := range req.N {
				b.WriteString("t" + strconv.Itoa(i) + " ")
			}
			c.Whole([]byte(b.String()), req.N)
			return
		}
		if _, ok := c.BeginStream(fakecore.Waiting{}); !ok {
			return
		}
		if !c.Events(req.N, func(i int) { c.Event("", []byte("t"+strconv.Itoa(i))) }, func() []byte { return []byte("oops") }) {
			return
		}
		c.Event("", []byte("end"))
	},
}

func start(t *testing.T, cfg fakecore.Config, pipe bool) *fakecore.Server {
	t.Helper()
	s, err := fakecore.New(plain, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if pipe {
		s.StartPipe()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// call posts a request and returns the status, the headers and the body.
func call(t *testing.T, s *fakecore.Server, body string) (int, http.Header, string) {
	t.Helper()
	res, err := s.Client().Post(s.URL()+"/gen", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// A script decides the first requests in order, then the model draws; the
// recorded faults say which request got what.
func TestScriptThenDraws(t *testing.T) {
	s := start(t, fakecore.Config{Models: []fakecore.Model{{
		Name: "m",
		Script: []fakecore.Fault{
			{Kind: fakecore.FaultStatus, Status: 503},
			{},
			{Kind: fakecore.FaultStatus, Status: 200, Body: `{"not":"an answer"}`, Header: http.Header{"Retry-After": {"soon"}}},
		},
		Faults: []fakecore.Fault{{Kind: fakecore.FaultStatus, Status: 429, Fraction: 1}},
	}}}, false)
	want := []struct {
		status int
		body   string
		retry  string
	}{
		{503, "error 503", ""},
		{200, "t0 t1 ", ""},
		{200, `{"not":"an answer"}`, "soon"},
		{429, "error 429", ""},
		{429, "error 429", ""},
	}
	for i, w := range want {
		status, h, body := call(t, s, `{"model":"m","n":2}`)
		if status != w.status || body != w.body || h.Get("Retry-After") != w.retry {
			t.Errorf("request %d = %d %q retry-after %q, want %d %q %q", i, status, body, h.Get("Retry-After"), w.status, w.body, w.retry)
		}
	}
	var kinds []fakecore.FaultKind
	for _, r := range s.Requests() {
		kinds = append(kinds, r.Fault)
	}
	if got := len(kinds); got != 5 || kinds[0] != fakecore.FaultStatus || kinds[1] != fakecore.NoFault || s.Count("m") != 5 {
		t.Errorf("recorded faults %v, count %d; want status, none, status, status, status and 5", kinds, s.Count("m"))
	}
}

// Fault headers come first and Fault.Header replaces them.
func TestReplyHeaders(t *testing.T) {
	s := start(t, fakecore.Config{Models: []fakecore.Model{{Name: "m", Script: []fakecore.Fault{{
		Kind: fakecore.FaultStatus, Status: 429, RetryAfter: 1500 * time.Millisecond, RetryAfterMsHeader: 20 * time.Millisecond,
		ShouldRetry: "false", Header: http.Header{"retry-after-ms": {"-1"}, "Content-Type": {"text/plain"}},
	}}}}}, false)
	status, h, _ := call(t, s, `{"model":"m"}`)
	if status != 429 || h.Get("Retry-After") != "2" || h.Get("Retry-After-Ms") != "-1" || h.Get("X-Should-Retry") != "false" || h.Get("Content-Type") != "text/plain" {
		t.Errorf("429 headers %v, want retry-after 2, retry-after-ms -1, x-should-retry false, text/plain", h)
	}
}

// A stream's error event comes after AfterChunks events, named by Event,
// with Body as its data, at the model's pace in virtual time.
func TestStreamErrorEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := start(t, fakecore.Config{Models: []fakecore.Model{{
			Name:   "m",
			Pacing: fakecore.Pacing{Latency: 100 * time.Millisecond, TTFT: 200 * time.Millisecond, TokensPerSecond: 10},
			Script: []fakecore.Fault{
				{Kind: fakecore.FaultStreamError, AfterChunks: 2, Event: "error", Body: `{"message":"boom"}`},
				{Kind: fakecore.FaultStreamError},
				{},
			},
		}}}, true)
		for i, want := range []struct {
			body string
			took time.Duration
		}{
			{"data: t0\n\ndata: t1\n\nevent: error\ndata: {\"message\":\"boom\"}\n\n", 400 * time.Millisecond},
			{"data: oops\n\n", 300 * time.Millisecond},
			{"data: t0\n\ndata: t1\n\ndata: t2\n\ndata: end\n\n", 500 * time.Millisecond},
		} {
			begin := time.Now()
			_, h, body := call(t, s, `{"model":"m","stream":true,"n":3}`)
			if body != want.body || time.Since(begin) != want.took || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
				t.Errorf("stream %d = %q after %v (%s), want %q after %v", i, body, time.Since(begin), h.Get("Content-Type"), want.body, want.took)
			}
		}
	})
}

// A malformed event is the dialect's (Dialect.MalformedEvent), after
// AfterChunks events; without one, a data-only cut chat-completion chunk.
func TestMalformedEvent(t *testing.T) {
	named := plain
	named.MalformedEvent = func() (string, []byte) { return "delta", []byte(`{"cut`) }
	for _, c := range []struct {
		name string
		d    fakecore.Dialect[plainReq]
		want string
	}{
		{"default", plain, "data: t0\n\ndata: {\"id\": \"broken\", \"choices\": [\n\n"},
		{"named", named, "data: t0\n\nevent: delta\ndata: {\"cut\n\n"},
	} {
		s, err := fakecore.New(c.d, fakecore.Config{Models: []fakecore.Model{{Name: "m", Script: []fakecore.Fault{{Kind: fakecore.FaultMalformed, AfterChunks: 1}}}}})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		_, _, body := call(t, s, `{"model":"m","stream":true,"n":3}`)
		s.Close()
		if body != c.want {
			t.Errorf("%s: stream = %q, want %q", c.name, body, c.want)
		}
	}
}

// With Config.Handler the core records each request, then the handler
// answers it with the body intact, in memory too.
func TestHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write(append([]byte("echo "), b...))
		})
		var seen []string
		s := start(t, fakecore.Config{Handler: h, OnRequest: func(r fakecore.Request) { seen = append(seen, r.Model) }}, true)
		status, _, body := call(t, s, `{"model":"x","stream":true}`)
		res, err := s.Client().Get(s.URL() + "/elsewhere")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		rs := s.Requests()
		if status != 418 || body != `echo {"model":"x","stream":true}` || res.StatusCode != 418 {
			t.Errorf("handler answered %d %q and %d, want 418 with the body echoed, and 418", status, body, res.StatusCode)
		}
		if len(rs) != 2 || rs[0].Model != "x" || !rs[0].Stream || s.Count("x") != 1 || len(seen) != 2 || s.URL() != "http://fakeplain.pipe" {
			t.Errorf("recorded %+v, seen %v, URL %s; want two requests, the first for x streamed, at http://fakeplain.pipe", rs, seen, s.URL())
		}
	})
}

// A stall without end ends with the client, and Close ends the rest with a
// dropped connection rather than an empty answer.
func TestStallsEndWithClientAndClose(t *testing.T) {
	arrived := make(chan struct{}, 1)
	cfg := fakecore.Config{
		Models:    []fakecore.Model{{Name: "m", Faults: []fakecore.Fault{{Kind: fakecore.FaultStallBeforeHeaders, Fraction: 1}}}},
		OnRequest: func(fakecore.Request) { arrived <- struct{}{} },
	}
	synctest.Test(t, func(t *testing.T) {
		s := start(t, cfg, true)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/gen", strings.NewReader(`{"model":"m"}`))
		_, err := s.Client().Do(req)
		<-arrived
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("stalled request = %v, want the client's deadline", err)
		}
	})
	s := start(t, cfg, false)
	done := make(chan error)
	go func() {
		_, err := s.Client().Post(s.URL()+"/gen", "application/json", strings.NewReader(`{"model":"m"}`))
		done <- err
	}()
	<-arrived
	s.Close()
	if err := <-done; err == nil {
		t.Errorf("request stalled at Close: err = nil, want a transport error")
	}
}

func TestNewRejects(t *testing.T) {
	for _, m := range []fakecore.Model{
		{Faults: []fakecore.Fault{{Fraction: -0.1}}},
		{Faults: []fakecore.Fault{{Fraction: 0.6}, {Fraction: 0.6}}},
		{Script: []fakecore.Fault{{Kind: fakecore.FaultStatus, Status: 200}}},
		{Script: []fakecore.Fault{{Kind: fakecore.FaultStatus, Status: 600}}},
		{Script: []fakecore.Fault{{Kind: fakecore.FaultStallMidStream, Stall: -time.Second}}},
		{Script: []fakecore.Fault{{AfterChunks: -1}}},
	} {
		if s, err := fakecore.New(plain, fakecore.Config{Models: []fakecore.Model{m}}); s != nil || err == nil || !strings.HasPrefix(err.Error(), "fakeplain: ") {
			t.Errorf("New(%+v) = %v, %v; want a fakeplain: error", m, s, err)
		}
	}
	if _, err := fakecore.New(plain, fakecore.Config{Models: []fakecore.Model{{Name: "a"}, {Name: "a"}}}); err == nil {
		t.Error("New with a duplicate model succeeded, want an error")
	}
	// A script step's Fraction is not a share: any value is accepted.
	if _, err := fakecore.New(plain, fakecore.Config{Models: []fakecore.Model{{Script: []fakecore.Fault{{Fraction: 7}}}}}); err != nil {
		t.Errorf("New with a script step of Fraction 7 = %v, want nil", err)
	}
}

// TestQuota: counters over their own windows; an enforced refusal names
// the first counter it would pass and counts nothing; without Enforce the
// remaining floor at zero; a new window starts from zero.
func TestQuota(t *testing.T) {
	var q fakecore.Quota
	limits := []fakecore.Limit{{Max: 2}, {Max: 10, Window: 10 * time.Second}}
	type step struct {
		at      time.Duration
		enforce bool
		n       []int
		want    fakecore.Taken
	}
	for i, s := range []step{
		{0, true, []int{1, 4}, fakecore.Taken{Remaining: []int{1, 6}, Reset: []time.Duration{time.Minute, 10 * time.Second}, Refused: -1}},
		{time.Second, true, []int{1, 7}, fakecore.Taken{Remaining: []int{1, 6}, Reset: []time.Duration{59 * time.Second, 9 * time.Second}, Refused: 1}},
		{2 * time.Second, true, []int{1, 6}, fakecore.Taken{Remaining: []int{0, 0}, Reset: []time.Duration{58 * time.Second, 8 * time.Second}, Refused: -1}},
		{3 * time.Second, true, []int{1, 0}, fakecore.Taken{Remaining: []int{0, 0}, Reset: []time.Duration{57 * time.Second, 7 * time.Second}, Refused: 0}},
		{4 * time.Second, false, []int{1, 1}, fakecore.Taken{Remaining: []int{0, 0}, Reset: []time.Duration{56 * time.Second, 6 * time.Second}, Refused: -1}},
		{12 * time.Second, false, []int{0, 3}, fakecore.Taken{Remaining: []int{0, 7}, Reset: []time.Duration{48 * time.Second, 8 * time.Second}, Refused: -1}},
		{61 * time.Second, true, []int{1, 0}, fakecore.Taken{Remaining: []int{1, 10}, Reset: []time.Duration{59 * time.Second, 9 * time.Second}, Refused: -1}},
	} {
		if got := q.Take(s.at, s.enforce, limits, s.n...); !reflect.DeepEqual(got, s.want) {
			t.Errorf("step %d: Take = %+v, want %+v", i, got, s.want)
		}
	}
}
