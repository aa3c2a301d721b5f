package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// hangThen is a Model whose first call hangs until its context ends and then
// fails with what verdict makes of the context (as an adapter classifies its
// own timeout), and whose later calls answer.
func hangThen(verdict func(ctx context.Context) error) *counting {
	return &counting{fn: func(ctx context.Context, n int, req *portico.Request) (*portico.Response, error) {
		if n > 0 {
			if req.OnChunk != nil {
				if err := req.OnChunk(portico.Chunk{Text: "ok"}); err != nil {
					return nil, err
				}
			}
			return okResp, nil
		}
		<-ctx.Done()
		return nil, verdict(ctx)
	}}
}

// notSent is the error of the openai adapter for an attempt deadline that
// passed before the request was written (a dial that hangs).
func notSent(ctx context.Context) error {
	return &portico.Error{Class: portico.Transient, Reason: "attempt deadline before the request was sent",
		Err: portico.Join(ctx.Err(), context.Cause(ctx))}
}

// sent is the adapter's error for an attempt deadline after the request was
// written: its outcome is unknown.
func sent(ctx context.Context) error {
	return &portico.Error{Class: portico.Ambiguous, Reason: "attempt deadline after the request was sent",
		Err: portico.Join(ctx.Err(), context.Cause(ctx))}
}

// An attempt timeout keeps the inner layer's Transient verdict (the request
// was never sent), so a request with NoAmbiguousRetry is still retried; an
// inner Ambiguous or unclassified (Deadline) failure makes it Ambiguous. Both
// wrap the timeout's sentinel. The same holds for the first-chunk timeout of a
// streamed attempt.
func TestTimeoutKeepsNotSentTransient(t *testing.T) {
	cases := []struct {
		name    string
		verdict func(context.Context) error
		want    portico.Class // class of the first attempt's error
	}{
		{"not sent", notSent, portico.Transient},
		{"sent", sent, portico.Ambiguous},
		{"unclassified", func(ctx context.Context) error { return ctx.Err() }, portico.Ambiguous},
		{"deadline", portico.FromContext, portico.Ambiguous},
	}
	for _, stream := range []bool{false, true} {
		sentinel, cfg := ErrAttemptTimeout, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{Attempt: time.Second}}
		if stream {
			sentinel, cfg = ErrFirstChunkTimeout, Config{Backoff: Backoff{Schedule: Immediate}, Timeouts: Timeouts{FirstChunk: time.Second}}
		}
		for _, c := range cases {
			t.Run(map[bool]string{false: "attempt/", true: "first chunk/"}[stream]+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					base := hangThen(c.verdict)
					var infos []Info
					cfg := cfg
					cfg.OnRetry = func(i Info) { infos = append(infos, i) }
					req := userReq.Clone()
					req.NoAmbiguousRetry = true
					if stream {
						req.OnChunk = func(portico.Chunk) error { return nil }
					}
					resp, err := mustNew(t, cfg).Wrap(base).Generate(context.Background(), req)
					if c.want == portico.Transient {
						if err != nil || resp != okResp || base.calls() != 2 {
							t.Fatalf("Generate = %v, %v after %d calls, want ok from the retry", resp, err, base.calls())
						}
						if len(infos) != 1 || infos[0].Class != portico.Transient || !errors.Is(infos[0].Err, sentinel) {
							t.Errorf("retries = %+v, want one after a transient error wrapping %v", infos, sentinel)
						}
						return
					}
					if portico.ClassOf(err) != c.want || !errors.Is(err, sentinel) || base.calls() != 1 {
						t.Errorf("Generate err = %v (class %v) after %d calls, want %v wrapping %v after 1",
							err, portico.ClassOf(err), base.calls(), c.want, sentinel)
					}
				})
			})
		}
	}
}
