package fallback

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/portico-llm/portico"
)

// step is what a continuing route does on one call: deliver chunks, then
// fail with err or answer with their text.
type step struct {
	chunks []string
	err    error
}

// script is a route Model that plays steps[n] on call n (the last
// repeats), remembering each request.
type script struct {
	steps []step
	reqs  []*portico.Request
}

func (s *script) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	st := s.steps[min(len(s.reqs), len(s.steps)-1)]
	s.reqs = append(s.reqs, req)
	for _, c := range st.chunks {
		if err := req.OnChunk(portico.Chunk{Text: c}); err != nil {
			return nil, err
		}
	}
	if st.err != nil {
		return nil, st.err
	}
	return &portico.Response{Text: strings.Join(st.chunks, ""), FinishReason: portico.FinishStop,
		Usage: portico.Usage{InputTokens: 20, OutputTokens: len(st.chunks)}}, nil
}

var errCut = &portico.Error{Class: portico.Ambiguous, Reason: "connection reset"}

// contRoute is a route over m that continues in the form c, at one unit
// per input token and ten per output token.
func contRoute(name string, m portico.Model, c portico.Continuation) portico.Route {
	return portico.Route{Name: name, Model: m, Capabilities: portico.Capabilities{Continuation: c, InputPrice: 1, OutputPrice: 10}}
}

// contReq is a streamed request that continues broken streams, and the
// chunks it receives.
func contReq() (*portico.Request, *[]string) {
	var got []string
	req := simple.Clone()
	req.MaxOutputTokens = 100
	req.ContinueOnBreak = true
	req.OnChunk = func(c portico.Chunk) error { got = append(got, c.Text); return nil }
	return req, &got
}

// With one route, a break is continued on the same route, as a prefill of
// the text delivered: the answer is the whole, its usage and cost add the
// broken attempt's estimate (8 input tokens, 3 output for "one two three"),
// the hop says where it broke, and the request was left as the caller made it.
func TestContinueOnSameRoute(t *testing.T) {
	m := &script{steps: []step{{chunks: []string{"one", " two", " three"}, err: errCut}, {chunks: []string{" four", " five"}}}}
	g := MustNew(Config{Routes: []portico.Route{contRoute("a", m, portico.ContinuePrefill)}})
	req, got := contReq()
	resp, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := "one two three four five"; resp.Text != want || strings.Join(*got, "") != want {
		t.Errorf("Text %q, chunks %q; want %q in both", resp.Text, *got, want)
	}
	h := resp.Hops
	if len(h) != 1 || h[0].Route != "a" || h[0].Reason != "ambiguous" || h[0].Chunks != 3 || h[0].Bytes != 13 || h[0].Err != errCut {
		t.Errorf("Hops = %+v, want a left after 3 chunks of 13 bytes", h)
	}
	if want := (portico.Usage{InputTokens: 20 + 6, OutputTokens: 2 + 3}); resp.Usage != want || resp.Cost != 20+6+10*(2+3) {
		t.Errorf("Usage %+v, Cost %v; want %+v and 76", resp.Usage, resp.Cost, want)
	}
	c := m.reqs[1]
	last := c.Messages[len(c.Messages)-1]
	if c.Prefix != "one two three" || last.Role != portico.RoleAssistant || last.Content[0].Text != "one two three" || c.MaxOutputTokens != 97 {
		t.Errorf("continuation: Prefix %q, last message %+v, MaxOutputTokens %d; want the prefix as a prefill and 100-3", c.Prefix, last, c.MaxOutputTokens)
	}
	if req.Prefix != "" || len(req.Messages) != 1 {
		t.Errorf("the caller's request was modified: %+v", req)
	}
}

// A break moves to the next route that can continue: one that declares no
// Continuation is skipped ("continuation"), one whose continuation starts
// over and contradicts the delivered text is refused (InvalidResponse,
// nothing of it delivered), and the next continues with the instruction.
func TestContinueOnNextFittingRoute(t *testing.T) {
	a := &script{steps: []step{{chunks: []string{"The capital of France is", " Paris,"}, err: errCut}}}
	none := &script{steps: []step{{chunks: []string{"x"}}}}
	restart := &script{steps: []step{{chunks: []string{"The capital of France is", " Lyon."}}}}
	c := &script{steps: []step{{chunks: []string{" a city", " on the Seine."}}}}
	g := MustNew(Config{Routes: []portico.Route{
		contRoute("a", a, portico.ContinuePrefill), contRoute("none", none, portico.ContinueNone),
		contRoute("restart", restart, portico.ContinuePrefill), contRoute("c", c, portico.ContinueInstruct),
	}})
	req, got := contReq()
	resp, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := "The capital of France is Paris, a city on the Seine."; resp.Text != want || strings.Join(*got, "") != want || resp.Route != "c" {
		t.Errorf("Text %q from %q, chunks %q; want %q from c", resp.Text, resp.Route, *got, want)
	}
	var reasons []string
	for _, h := range resp.Hops {
		reasons = append(reasons, h.Route+":"+h.Reason)
	}
	if strings.Join(reasons, " ") != "a:ambiguous none:continuation restart:invalid_response" || !errors.Is(resp.Hops[2].Err, portico.ErrRestart) {
		t.Errorf("Hops = %v (restart's error %v), want a broken, none skipped, restart refused with ErrRestart", reasons, resp.Hops[2].Err)
	}
	if len(none.reqs) != 0 || c.reqs[0].Messages[len(c.reqs[0].Messages)-1].Content[0].Text != portico.ContinueInstruction {
		t.Errorf("none called %d times; c's last message %+v; want none never, c told to continue", len(none.reqs), c.reqs[0].Messages)
	}
}

// A stream is continued past Config.Continuations breaks at most; a break
// after a tool call's chunk, or after the caller's OnChunk failed, and one
// of a request that does not set ContinueOnBreak, is the call's error at
// once.
func TestContinueStops(t *testing.T) {
	t.Run("bounded", func(t *testing.T) {
		m := &script{steps: []step{{chunks: []string{"one"}, err: errCut}, {chunks: []string{" two"}, err: errCut}, {chunks: []string{" three"}, err: errCut}}}
		g := MustNew(Config{Routes: []portico.Route{contRoute("a", m, portico.ContinuePrefill)}, Continuations: 2})
		req, got := contReq()
		_, err := g.Generate(context.Background(), req)
		if !errors.Is(err, errCut) || len(m.reqs) != 3 || strings.Join(*got, "|") != "one| two| three" {
			t.Errorf("Generate = %v after %d calls, chunks %q; want the cut after 3 calls (2 continuations)", err, len(m.reqs), *got)
		}
	})
	for _, tt := range []struct {
		name   string
		chunks []string
		edit   func(*portico.Request)
	}{
		{"tool call", []string{"word", ""}, nil},
		{"caller failed", []string{"word"}, func(r *portico.Request) {
			r.OnChunk = func(portico.Chunk) error { return errors.New("gone") }
		}},
		{"not opted in", []string{"word"}, func(r *portico.Request) { r.ContinueOnBreak = false }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &script{steps: []step{{chunks: tt.chunks, err: errCut}}}
			g := MustNew(Config{Routes: []portico.Route{contRoute("a", m, portico.ContinuePrefill), contRoute("b", m, portico.ContinuePrefill)}})
			req, _ := contReq()
			if tt.edit != nil {
				tt.edit(req)
			}
			if _, err := g.Generate(context.Background(), req); err == nil || len(m.reqs) != 1 {
				t.Errorf("Generate = %v after %d calls, want an error after 1", err, len(m.reqs))
			}
		})
	}
}

// A streamed request that does not opt in costs what it did before
// continuation existed: the group's watch and its OnChunk method value,
// and, without a deadline, the candidate's context that carries the
// route's cooldown.
func TestStreamAllocs(t *testing.T) {
	resp := &portico.Response{Text: "ok"}
	m := portico.ModelFunc(func(_ context.Context, req *portico.Request) (*portico.Response, error) {
		req.OnChunk(portico.Chunk{Text: "ok"})
		return resp, nil
	})
	g := MustNew(Config{Routes: []portico.Route{{Name: "a", Model: m}, {Name: "b", Model: m}}})
	req := simple.Clone()
	req.OnChunk = func(portico.Chunk) error { return nil }
	ctx := context.Background()
	if n := testing.AllocsPerRun(1000, func() { g.Generate(ctx, req) }); n != 3 {
		t.Errorf("allocs per streamed first-route success = %v, want 3", n)
	}
}

// TestContinueSkipsCoveringRouteWithoutContinuation: a break on a primary
// that declares no Continuation turns the request into a continuation (its
// Prefix is set), which only a route with a Continuation fits. A second
// route just like the primary covers it (portico.Capabilities.Covers), but
// the request Fits passed on is not the one it now is: the second route
// must be skipped ("continuation"), untried, and the third continue.
func TestContinueSkipsCoveringRouteWithoutContinuation(t *testing.T) {
	a := &script{steps: []step{{chunks: []string{"one", " two"}, err: errCut}}}
	b := &script{steps: []step{{chunks: []string{" three"}}}}
	c := &script{steps: []step{{chunks: []string{" three"}}}}
	g := MustNew(Config{Routes: []portico.Route{
		contRoute("a", a, portico.ContinueNone), contRoute("b", b, portico.ContinueNone), contRoute("c", c, portico.ContinuePrefill),
	}})
	req, got := contReq()
	resp, err := g.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, h := range resp.Hops {
		reasons = append(reasons, h.Route+":"+h.Reason)
	}
	if resp.Route != "c" || strings.Join(reasons, " ") != "a:ambiguous b:continuation" || len(b.reqs) != 0 {
		t.Errorf("answered by %q, Hops %v, b called %d times; want c's continuation, b skipped untried", resp.Route, reasons, len(b.reqs))
	}
	if want := "one two three"; resp.Text != want || strings.Join(*got, "") != want {
		t.Errorf("Text %q, chunks %q; want %q", resp.Text, *got, want)
	}
}
