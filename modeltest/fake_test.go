package modeltest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

func userReq(text string) *portico.Request {
	return &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

func TestFakeSequence(t *testing.T) {
	f := NewFake(Fail(StatusError(503)), Answer("b"))
	want := []string{"error", "b", "b"}
	for i, w := range want {
		resp, err := f.Generate(context.Background(), userReq("q"))
		got := "error"
		if err == nil {
			got = resp.Text
		} else if !errors.Is(err, portico.ErrTransient) || resp != nil {
			t.Errorf("call %d = (%v, %v), want (nil, a transient error)", i, resp, err)
		}
		if got != w {
			t.Errorf("call %d = %q, want %q", i, got, w)
		}
	}
	if f.Count() != 3 {
		t.Errorf("Count() = %d, want 3", f.Count())
	}
	for i, c := range f.Calls() {
		if c.N != i {
			t.Errorf("Calls()[%d].N = %d, want %d", i, c.N, i)
		}
	}
}

func TestFakeZeroAndFunc(t *testing.T) {
	var zero Fake
	resp, err := zero.Generate(context.Background(), userReq("q"))
	if err != nil || resp.Text != "ok" || resp.FinishReason != portico.FinishStop || resp.Model != "m" {
		t.Fatalf("zero Fake = (%+v, %v), want text ok, finish stop, model m", resp, err)
	}
	resp, err = NewFake(Outcome{}).Generate(context.Background(), userReq("q"))
	if err != nil || resp.Text != "" || resp.FinishReason != portico.FinishStop {
		t.Fatalf("zero Outcome = (%+v, %v), want empty text, finish stop", resp, err)
	}
	f := NewFakeFunc(func(n int, req *portico.Request) Outcome {
		return Answer(strings.Repeat("x", n) + req.Messages[0].Content[0].Text)
	})
	for n := range 3 {
		resp, _ := f.Generate(context.Background(), userReq("q"))
		if want := strings.Repeat("x", n) + "q"; resp.Text != want {
			t.Errorf("call %d = %q, want %q", n, resp.Text, want)
		}
	}
}

func TestFakeResponseIsACopy(t *testing.T) {
	f := NewFake(Answer("hi"))
	a, _ := f.Generate(context.Background(), userReq("q"))
	a.Text = "changed"
	b, _ := f.Generate(context.Background(), userReq("q"))
	if b.Text != "hi" || a == b {
		t.Errorf("second answer = %q (same pointer %v), want %q in a fresh Response", b.Text, a == b, "hi")
	}
	if a.Usage.OutputTokens != 1 {
		t.Errorf("Answer(hi).Usage.OutputTokens = %d, want 1", a.Usage.OutputTokens)
	}
}

func TestFakeRecords(t *testing.T) {
	f := &Fake{RecordLimit: 2}
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	req := userReq("first")
	f.Generate(portico.ContextWithAttempt(ctx, portico.Attempt{Index: 2, ID: "a2"}), req)
	req.Model = "changed after the call"
	for range 3 {
		f.Generate(context.Background(), userReq("later"))
	}
	calls := f.Calls()
	if len(calls) != 2 || f.Count() != 4 {
		t.Fatalf("after 4 calls with RecordLimit 2: len(Calls()) = %d, Count() = %d, want 2, 4", len(calls), f.Count())
	}
	c := calls[0]
	if c.Request.Model != "m" || c.Attempt.Index != 2 || c.Attempt.ID != "a2" || !c.Deadline.Equal(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Calls()[0] = model %q attempt %+v deadline %v, want m, {2 a2}, 2030-01-01", c.Request.Model, c.Attempt, c.Deadline)
	}
	if !calls[1].Deadline.IsZero() {
		t.Errorf("Calls()[1].Deadline = %v, want zero (no deadline)", calls[1].Deadline)
	}
	if got := f.Requests(); len(got) != 2 || got[1].Messages[0].Content[0].Text != "later" {
		t.Errorf("Requests() = %d requests, want 2 with the second saying later", len(got))
	}
	none := &Fake{RecordLimit: -1}
	none.Generate(context.Background(), userReq("q"))
	if len(none.Calls()) != 0 || none.Count() != 1 {
		t.Errorf("RecordLimit -1: len(Calls()) = %d, Count() = %d, want 0, 1", len(none.Calls()), none.Count())
	}
}

// chunkAt records each chunk with the virtual time since start.
type chunkAt struct {
	text string
	at   time.Duration
}

func TestFakeSchedule(t *testing.T) {
	resp := Answer("a b c").Response
	for _, c := range []struct {
		name   string
		o      Outcome
		stream bool
		chunks []chunkAt
		took   time.Duration
	}{
		{"stream", Outcome{Response: resp, TTFT: 100 * time.Millisecond, ChunkGap: 10 * time.Millisecond},
			true, []chunkAt{{"a ", 100 * time.Millisecond}, {"b ", 110 * time.Millisecond}, {"c", 120 * time.Millisecond}}, 120 * time.Millisecond},
		{"stream latency", Outcome{Response: resp, TTFT: 100 * time.Millisecond, ChunkGap: 10 * time.Millisecond, Latency: time.Second},
			true, []chunkAt{{"a ", 100 * time.Millisecond}, {"b ", 110 * time.Millisecond}, {"c", 120 * time.Millisecond}}, time.Second},
		{"no stream", Outcome{Response: resp, TTFT: 100 * time.Millisecond, ChunkGap: 10 * time.Millisecond}, false, nil, 120 * time.Millisecond},
		{"latency only", Outcome{Response: resp, Latency: 2 * time.Second}, false, nil, 2 * time.Second},
		{"explicit chunks", Outcome{Response: resp, Chunks: []string{"a b", " c"}, ChunkGap: time.Second},
			true, []chunkAt{{"a b", 0}, {" c", time.Second}}, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var got []chunkAt
				req := userReq("q")
				if c.stream {
					req.OnChunk = func(ch portico.Chunk) error {
						got = append(got, chunkAt{ch.Text, time.Since(start)})
						return nil
					}
				}
				r, err := NewFake(c.o).Generate(t.Context(), req)
				if err != nil || r.Text != "a b c" {
					t.Fatalf("Generate() = (%v, %v), want text a b c", r, err)
				}
				if !slices.Equal(got, c.chunks) {
					t.Errorf("chunks = %v, want %v", got, c.chunks)
				}
				if took := time.Since(start); took != c.took {
					t.Errorf("Generate took %v, want %v", took, c.took)
				}
			})
		})
	}
}

func TestFakeStallAndMidStreamError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var got strings.Builder
		req := userReq("q")
		req.OnChunk = func(c portico.Chunk) error { got.WriteString(c.Text); return nil }
		start := time.Now()
		resp, err := NewFake(Outcome{Chunks: []string{"x", "y", "z"}, Stall: true, StallAfter: 2}).Generate(ctx, req)
		if resp != nil || portico.ClassOf(err) != portico.Deadline || got.String() != "xy" || time.Since(start) != 5*time.Second {
			t.Errorf("stall after 2 = (%v, %v) after %v with chunks %q, want a deadline error after 5s with chunks xy",
				resp, err, time.Since(start), got.String())
		}

		got.Reset()
		resp, err = NewFake(Outcome{Chunks: []string{"a", "b"}, Err: StatusError(502)}).Generate(t.Context(), req)
		if resp != nil || !errors.Is(err, portico.ErrTransient) || got.String() != "ab" {
			t.Errorf("mid-stream error = (%v, %v) with chunks %q, want a transient error after chunks ab", resp, err, got.String())
		}
	})
}

func TestFakeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := NewFake(Answer("never"))
	resp, err := f.Generate(ctx, userReq("q"))
	if resp != nil || portico.ClassOf(err) != portico.Canceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Generate(canceled) = (%v, %v), want (nil, class canceled wrapping context.Canceled)", resp, err)
	}
	if f.Count() != 1 {
		t.Errorf("Count() = %d, want 1 (a canceled call still counts)", f.Count())
	}
}

func TestFakeCallbackError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	req := userReq("q")
	req.OnChunk = func(portico.Chunk) error { n++; return stop }
	resp, err := NewFake(Answer("a b c")).Generate(context.Background(), req)
	if resp != nil || err != stop || n != 1 {
		t.Errorf("Generate with failing callback = (%v, %v) after %d chunks, want (nil, the callback's error) after 1", resp, err, n)
	}
}

func TestChunker(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a b", []string{"a ", "b"}},
		{"a  b ", []string{"a ", " ", "b "}},
		{"héllo wörld", []string{"héllo ", "wörld"}},
	} {
		ch := chunker{text: c.text}
		var got []string
		for s, ok := ch.next(); ok; s, ok = ch.next() {
			got = append(got, s)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("chunks(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestFakeAllocs(t *testing.T) {
	f := &Fake{Outcomes: []Outcome{Answer("hi")}, RecordLimit: -1}
	req, ctx := userReq("q"), context.Background()
	if got := testing.AllocsPerRun(1000, func() { f.Generate(ctx, req) }); got != 1 {
		t.Errorf("Fake.Generate allocs = %v, want 1 (the Response copy)", got)
	}
	req.OnChunk = func(portico.Chunk) error { return nil }
	if got := testing.AllocsPerRun(1000, func() { f.Generate(ctx, req) }); got != 1 {
		t.Errorf("Fake.Generate streaming allocs = %v, want 1", got)
	}
}

func BenchmarkFakeGenerate(b *testing.B) {
	f := NewFake(Answer("hi"))
	req, ctx := userReq("q"), context.Background()
	for range DefaultRecordLimit {
		f.Generate(ctx, req)
	}
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		sink, _ = f.Generate(ctx, req)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// sink keeps benchmark results alive so the compiler cannot elide them.
var sink *portico.Response

// BenchmarkBareModel is the floor to compare BenchmarkFakeGenerate with: a
// ModelFunc that allocates the same Response.
func BenchmarkBareModel(b *testing.B) {
	m := portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: "hi", FinishReason: portico.FinishStop, Model: req.Model}, nil
	})
	req, ctx := userReq("q"), context.Background()
	b.ReportAllocs()
	cpu := cpuTime()
	for b.Loop() {
		sink, _ = m.Generate(ctx, req)
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// FuzzChunker checks that the default split of any text yields chunks that
// concatenate to it, each non-empty and ending in a space except the last.
func FuzzChunker(f *testing.F) {
	for _, s := range []string{"", "a", "a b", "  ", "héllo wörld ", "x\ny z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ch := chunker{text: text}
		var b strings.Builder
		var chunks []string
		for s, ok := ch.next(); ok; s, ok = ch.next() {
			chunks = append(chunks, s)
			b.WriteString(s)
		}
		if b.String() != text {
			t.Fatalf("chunks(%q) = %q, concatenating to %q, want the text", text, chunks, b.String())
		}
		for i, c := range chunks {
			if c == "" || (i < len(chunks)-1 && c[len(c)-1] != ' ') || strings.Contains(c[:len(c)-1], " ") {
				t.Fatalf("chunks(%q)[%d] = %q, want non-empty, one space at most, at its end unless last", text, i, c)
			}
		}
	})
}

// A nil request is counted, recorded as a zero Request, and fails Permanent
// instead of panicking.
func TestFakeNilRequest(t *testing.T) {
	f := NewFake(Answer("x"))
	resp, err := f.Generate(context.Background(), nil)
	if resp != nil || portico.ClassOf(err) != portico.Permanent {
		t.Errorf("Generate(nil) = (%v, %v), want a permanent error", resp, err)
	}
	if calls := f.Calls(); f.Count() != 1 || len(calls) != 1 || calls[0].Request.Model != "" || calls[0].Request.Messages != nil {
		t.Errorf("after Generate(nil): Count %d, Calls %+v, want 1 call with a zero Request", f.Count(), calls)
	}
}
