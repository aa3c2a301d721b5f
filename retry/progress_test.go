package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/validate"
)

// A layer inside the Retrier that holds chunks back (validate buffering a
// schema answer until it is accepted) reports each with portico.Progress, and
// the watchdog takes it as a chunk: a slow but live answer is not abandoned.
// Progress is not delivery: the attempt may still be retried after it.

// jsonChunks is a 20-chunk JSON answer valid against progressSchema.
func jsonChunks() []string {
	c := []string{`{"a":"`}
	for range 18 {
		c = append(c, "x")
	}
	return append(c, `"}`)
}

const progressSchema = `{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`

func schemaStream(noAmbiguousRetry bool) (*portico.Request, *[]string) {
	req, got := collect(noAmbiguousRetry)
	req.Schema = &portico.Schema{Name: "s", JSON: []byte(progressSchema)}
	return req, got
}

// Retry (Timeouts.FirstChunk 200 ms) around validate around a model streaming 20
// chunks 50 ms apart (the first at 50 ms): the answer arrives whole after 1 s,
// in one attempt, though nothing reached the Retrier for that second.
func TestBufferedSlowStreamIsNotTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := streamer(plan{ttft: 50 * time.Millisecond, chunks: jsonChunks(), gap: 50 * time.Millisecond})
		m := portico.Chain(base, mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: 200 * time.Millisecond, ChunkGap: 200 * time.Millisecond}}).Wrap, validate.MustNew(validate.Config{}).Wrap)
		req, got := schemaStream(false)
		start := time.Now()
		resp, err := m.Generate(context.Background(), req)
		want := strings.Join(jsonChunks(), "")
		if err != nil || resp.Text != want || base.calls() != 1 {
			t.Fatalf("Generate = %v, %v after %d calls, want the answer from 1 call", resp, err, base.calls())
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("answer after %v, want 1s (20 chunks, 50 ms apart)", d)
		}
		if len(*got) != 1 || (*got)[0] != want {
			t.Errorf("caller's chunks = %q, want the accepted answer as one chunk", *got)
		}
	})
}

// A stream that stalls under validate still times out, and since progress is
// not delivery, the attempt is retried (by default, Ambiguous is).
func TestBufferedStalledStreamTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stalled  plan
		sentinel error
		at       time.Duration
	}{
		{"no chunk", plan{ttft: time.Hour, chunks: jsonChunks()}, ErrFirstChunkTimeout, 200 * time.Millisecond},
		{"stall after two", plan{chunks: jsonChunks()[:2], gap: 50 * time.Millisecond, hang: true}, ErrChunkGapTimeout, 250 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := streamer(tc.stalled, plan{chunks: jsonChunks()})
				var infos []Info
				m := portico.Chain(base, mustNew(t, Config{OnRetry: func(i Info) { infos = append(infos, i) }, Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: 200 * time.Millisecond, ChunkGap: 200 * time.Millisecond}}).Wrap,
					validate.MustNew(validate.Config{}).Wrap)
				req, got := schemaStream(false)
				start := time.Now()
				resp, err := m.Generate(context.Background(), req)
				if err != nil || base.calls() != 2 || len(*got) != 1 {
					t.Fatalf("Generate = %v, %v after %d calls, chunks %q; want the retry's answer", resp, err, base.calls(), *got)
				}
				if len(infos) != 1 || !errors.Is(infos[0].Err, tc.sentinel) {
					t.Fatalf("retries = %+v, want one after %v", infos, tc.sentinel)
				}
				if d := time.Since(start); d != tc.at {
					t.Errorf("answered after %v, want %v (the first attempt timed out then; the retry is instant)", d, tc.at)
				}
			})
		})
	}
	// With NoAmbiguousRetry the timeout is the call's error.
	synctest.Test(t, func(t *testing.T) {
		base := streamer(plan{ttft: time.Hour})
		m := portico.Chain(base, mustNew(t, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: 200 * time.Millisecond}}).Wrap,
			validate.MustNew(validate.Config{}).Wrap)
		req, _ := schemaStream(true)
		if _, err := m.Generate(context.Background(), req); !errors.Is(err, ErrFirstChunkTimeout) || base.calls() != 1 {
			t.Errorf("stalled, NoAmbiguousRetry: err %v after %d calls, want ErrFirstChunkTimeout after 1", err, base.calls())
		}
	})
}
