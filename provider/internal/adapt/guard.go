package adapt

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
	"github.com/portico-llm/portico/protect"
)

// Dialect is what a [Guard] needs of a provider's HTTP API: how it states
// errors, usage and the output bound in its bodies.
type Dialect struct {
	// Rules classifies what fails without the provider's own error.
	Rules *Rules
	// Classify returns the error of an HTTP error answer, from its status,
	// headers and body (at most ErrBodyLimit bytes of it).
	Classify func(status int, h http.Header, body []byte) *portico.Error
	// Usage reads the usage of a whole JSON answer, or of a stream's event
	// data; ok is false when it holds none.
	Usage func(body []byte) (u portico.Usage, ok bool)
	// MaxTokens reads N_max from a request's JSON body (0: none stated).
	MaxTokens func(body []byte) int
}

// Next sends a request on: the SDK's own transport, after the guard. It is
// the Stainless SDKs' option.MiddlewareNext, so that [Guard.Do] is their
// option.Middleware.
type Next = func(*http.Request) (*http.Response, error)

// Guard puts Portico's layers around each HTTP request of a provider's SDK:
// the SDK's middleware (or transport) calls Do, and Do sends the request
// through the chain of layers, whose innermost Model makes the HTTP
// exchange. A Guard is safe for concurrent use.
type Guard struct {
	d        Dialect
	m        portico.Model
	gap      time.Duration
	maxBytes int64
}

// MustGuard returns a Guard of dialect d configured by c (package protect
// says what each field does). It panics with c.Validate's error, as each
// adapter's Protect documents.
func MustGuard(d Dialect, c protect.Config) *Guard {
	if err := c.Validate(); err != nil {
		panic(err)
	}
	g := &Guard{d: d, gap: c.ChunkGap, maxBytes: MaxBytes(c.MaxResponseBytes, 64<<20)}
	var base portico.Model = exchangeModel{g: g}
	if len(c.Replicas) > 0 {
		routes := []portico.Route{{Name: "primary", Model: base}}
		for _, r := range c.Replicas {
			routes = append(routes, portico.Route{Name: r.Name, Model: portico.Chain(exchangeModel{g: g, to: rewrite(c.BaseURL, r), client: cmp.Or(c.Client, http.DefaultClient)}, r.Layers...)})
		}
		base = fallback.MustNew(fallback.Config{Routes: routes}) // the routes Validate checked
	}
	g.m = portico.Chain(base, c.Layers...)
	return g
}

// rewrite returns the function that points a request at replica r: its
// URL's prefix base replaced by r.BaseURL, r.Header's values set.
func rewrite(base string, r protect.Replica) func(*http.Request) error {
	return func(hr *http.Request) error {
		rest, ok := strings.CutPrefix(hr.URL.String(), base)
		if !ok {
			return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "guard: request URL outside the client's BaseURL"}
		}
		u, err := url.Parse(r.BaseURL + rest)
		if err != nil {
			return &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "guard: replica URL", Err: err}
		}
		hr.URL, hr.Host = u, u.Host
		for k, v := range r.Header {
			hr.Header[http.CanonicalHeaderKey(k)] = v
		}
		return nil
	}
}

type callKey struct{}

// call is one request of the SDK, carried to the innermost Model by the
// context: the request, its body, how to send it, and the last answer.
type call struct {
	r    *http.Request
	body []byte
	next Next

	mu      sync.Mutex
	answers map[string]*http.Response // each successful exchange's answer (a stream's body unread), by the ID of its Response
	failed  *http.Response            // the last error answer, its body read
}

// keepAnswer keeps res, a successful exchange's answer, and returns the ID
// its Response carries up through the layers, so that Do returns the
// answer of the Response the layers chose (a hedge's winner, say).
func (c *call) keepAnswer(res *http.Response) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == nil {
		c.answers = map[string]*http.Response{}
	}
	id := "portico-guard-" + strconv.Itoa(len(c.answers))
	c.answers[id] = res
	return id
}

// keepFailed keeps res, an error answer whose body was read.
func (c *call) keepFailed(res *http.Response) {
	c.mu.Lock()
	c.failed = res
	c.mu.Unlock()
}

// chosen returns the answer kept for the Response of ID id (nil: none),
// and closes every other answer's body: streams no one will read.
func (c *call) chosen(id string) *http.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.answers[id]
	for k, other := range c.answers {
		if k != id {
			other.Body.Close()
		}
	}
	c.answers = nil
	return res
}

// errAnswered is Do's error when the layers answered without the
// provider's answer (a response cache among them): the SDK needs the
// provider's bytes.
var errAnswered = &portico.Error{Class: portico.Permanent, NotSent: true,
	Reason: "guard: a layer answered without the provider; a layer that answers by itself (a response cache) cannot run under Protect"}

// Do sends r through the layers. It returns the last HTTP answer the
// provider gave (an error status when the layers gave up on one, so that
// the SDK reports it in its own types, marked x-should-retry: false), or
// the layers' *portico.Error when none came (a limiter's refusal, an open
// breaker, a transport failure).
func (g *Guard) Do(r *http.Request, next Next) (*http.Response, error) {
	if n := r.Header.Get("X-Stainless-Retry-Count"); n != "" && n != "0" {
		return sdkRetried(r), nil
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	c := &call{r: r, body: body, next: next}
	req := g.request(r, body)
	resp, err := g.m.Generate(context.WithValue(r.Context(), callKey{}, c), req)
	if err == nil {
		if res := c.chosen(resp.ID); res != nil {
			return res, nil
		}
		return nil, errAnswered
	}
	c.chosen("") // no answer is returned: close every kept stream
	c.mu.Lock()
	failed := c.failed
	c.mu.Unlock()
	if failed == nil {
		return nil, err
	}
	// The layers retried as they saw fit: the SDK must not retry again.
	failed.Header.Set("X-Should-Retry", "false")
	return failed, nil
}

// readBody reads r's body whole (the SDKs buffer theirs, to retry).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

// request is the Portico request the layers see: the model, N_max and
// whether it streams from a JSON body, the tenant and priority from the context, and
// the body itself as one text part, which the estimators count. A body
// that is not JSON (a file upload) is counted as no text.
func (g *Guard) request(r *http.Request, body []byte) *portico.Request {
	req := &portico.Request{Identity: portico.IdentityFrom(r.Context()), Priority: portico.PriorityFrom(r.Context())}
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &head) != nil {
		req.Messages = []portico.Message{portico.Text(portico.RoleUser, "")}
		return req
	}
	req.Model = head.Model
	if req.Model == "" { // Google's APIs name it in the path: .../models/{model}:generateContent
		if _, after, ok := strings.Cut(r.URL.Path, "/models/"); ok {
			req.Model, _, _ = strings.Cut(after, ":")
		}
	}
	if g.d.MaxTokens != nil {
		req.MaxOutputTokens = g.d.MaxTokens(body)
	}
	req.Messages = []portico.Message{portico.Text(portico.RoleUser, string(body))}
	if head.Stream || strings.Contains(r.URL.Path, "stream") {
		req.OnChunk = func(portico.Chunk) error { return nil }
	}
	return req
}

// exchangeModel is the innermost Model: one HTTP exchange per Generate,
// to the request's own endpoint or, with to, a replica's.
type exchangeModel struct {
	g      *Guard
	to     func(*http.Request) error
	client *http.Client // with to: sends the request
}

// Generate sends the call's request with ctx's deadline and cancellation
// while it runs: a whole answer is read here, a stream up to its first
// event, so that the layers' attempt and first-chunk timeouts bound them.
// A stream's rest is read by the SDK after Generate returned, under the
// caller's context and the guard's gap.
func (m exchangeModel) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok {
		return nil, &portico.Error{Class: portico.Permanent, NotSent: true, Reason: "guard: no HTTP request in the context"}
	}
	hctx, cancel := context.WithCancelCause(c.r.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	x := &Exchange{Limit: m.g.maxBytes, TooLarge: errGuardTooLarge}
	hr, err := m.request(hctx, c)
	if err != nil {
		stop()
		cancel(nil)
		return nil, err
	}
	res, err := x.Watch(m.sender(c)(x.Begin(hr)))
	if err == nil && res.StatusCode < 400 && req.OnChunk != nil && isStream(res) {
		err = firstEvent(res)
		if err == nil {
			Alive(ctx)
			stop()
			res.Body = m.g.watchGap(res.Body, cancel)
			return &portico.Response{ID: c.keepAnswer(res), Model: req.Model, FinishReason: portico.FinishStop, RateLimit: m.rateLimit(x)}, nil
		}
	}
	defer stop()
	defer cancel(nil)
	if err != nil {
		return nil, m.failed(ctx, x, req.Model, err)
	}
	return m.whole(ctx, c, x, req.Model, res)
}

// request is the call's HTTP request under hctx, with its body replayable
// and m.to applied.
func (m exchangeModel) request(hctx context.Context, c *call) (*http.Request, error) {
	hr := c.r.Clone(hctx)
	if m.to != nil {
		if err := m.to(hr); err != nil {
			return nil, err
		}
	}
	hr.Body = io.NopCloser(bytes.NewReader(c.body))
	hr.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(c.body)), nil }
	return hr, nil
}

// sender sends a request: with m.client when there is one, else on down
// the call's transport.
func (m exchangeModel) sender(c *call) Next {
	if m.client != nil {
		return m.client.Do
	}
	return c.next
}

// failed is the classified error of an exchange that failed with err,
// counted against the Rules unless ctx stopped it.
func (m exchangeModel) failed(ctx context.Context, x *Exchange, model string, err error) *portico.Error {
	e := x.NewError(model, err)
	if !x.Stopped(ctx, e, m.g.d.Rules) {
		x.Failed(e, m.g.d.Rules)
	}
	return e
}

// whole reads a whole answer's body, keeps res for the SDK with the body
// put back, and returns the answer (its usage as the dialect reads it) or
// the dialect's classification of an error status.
func (m exchangeModel) whole(ctx context.Context, c *call, x *Exchange, model string, res *http.Response) (*portico.Response, error) {
	b, rerr := io.ReadAll(res.Body)
	res.Body.Close()
	if rerr != nil {
		return nil, m.failed(ctx, x, model, rerr)
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	if res.StatusCode >= 400 {
		c.keepFailed(res)
		e := m.g.d.Classify(res.StatusCode, res.Header, x.ErrBody)
		e.Model = model
		return nil, e
	}
	resp := &portico.Response{ID: c.keepAnswer(res), Model: model, FinishReason: portico.FinishStop, RateLimit: m.rateLimit(x)}
	if m.g.d.Usage != nil {
		resp.Usage, _ = m.g.d.Usage(b)
	}
	return resp, nil
}

func (m exchangeModel) rateLimit(x *Exchange) *portico.RateLimit {
	if r := m.g.d.Rules; r.RateLimit != nil && x.Header != nil {
		return r.RateLimit(x.Header, time.Now())
	}
	return nil
}

// errGuardTooLarge is a whole answer's error past the guard's byte bound.
var errGuardTooLarge = errors.New("guard: response larger than the guard's MaxResponseBytes")

func isStream(res *http.Response) bool {
	return strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream")
}

// firstEvent reads res's body up to the end of its first event (a blank
// line), at most 1 MiB of it, and puts what it read back in front of the
// rest.
func firstEvent(res *http.Response) error {
	br := bufio.NewReaderSize(res.Body, 4096)
	var head bytes.Buffer
	for head.Len() < 1<<20 {
		line, err := br.ReadSlice('\n')
		head.Write(line)
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 && bytes.Contains(head.Bytes(), []byte("data:")) {
			break
		}
	}
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&head, br), res.Body}
	return nil
}

// watchGap returns body, ended by cancel when no read returns data for
// the guard's gap.
func (g *Guard) watchGap(body io.ReadCloser, cancel context.CancelCauseFunc) io.ReadCloser {
	if g.gap <= 0 {
		return closing{body, func() { cancel(nil) }}
	}
	t := time.AfterFunc(g.gap, func() { cancel(portico.NewLayerTimeout("guard: chunk gap")) })
	return &gapBody{rc: body, t: t, gap: g.gap, cancel: cancel}
}

// closing is a body whose Close also calls done.
type closing struct {
	io.ReadCloser
	done func()
}

func (c closing) Close() error {
	err := c.ReadCloser.Close()
	c.done()
	return err
}

// gapBody resets its timer on every read that returns data.
type gapBody struct {
	rc     io.ReadCloser
	t      *time.Timer
	gap    time.Duration
	cancel context.CancelCauseFunc
}

func (b *gapBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.t.Reset(b.gap)
	}
	if err != nil {
		b.t.Stop()
	}
	return n, err
}

func (b *gapBody) Close() error {
	b.t.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// sdkRetried is the answer to a retry the SDK makes over the guard (its
// retries turned back on by an option after Protect): a 400 marked
// x-should-retry: false, which ends the SDK's loop at once, saying so in
// each API's error shape ({"error": {"type", "message"}}), where another
// error would be retried again and multiply what the layers decided.
func sdkRetried(r *http.Request) *http.Response {
	body := `{"type":"error","error":{"type":"portico_sdk_retry","message":"portico: the SDK retried a call its guard had ended; leave the SDK's retries off (no WithMaxRetries after Protect)"}}`
	return &http.Response{StatusCode: http.StatusBadRequest, Status: "400 Bad Request", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Should-Retry": {"false"}},
		Body:   io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}
}
