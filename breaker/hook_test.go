package breaker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// TestHookMayCallBreaker calls the guarded Model from inside the hook: the hook
// runs outside the lock, so the call is rejected at once instead of deadlocking.
func TestHookMayCallBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var m portico.Model
		var inner error
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OnStateChange: func(tr Transition) {
			if tr.To == Open {
				_, inner = m.Generate(context.Background(), &portico.Request{})
			}
		}})
		m = b.Wrap(&scripted{err: fail(portico.Transient)})
		call(t, m)
		if !errors.Is(inner, ErrOpen) {
			t.Errorf("call from inside the hook = %v, want ErrOpen", inner)
		}
	})
}

func TestLogger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(g []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		b := MustNew(Config{Name: "r1", Trip: ConsecutiveFailures(1), OpenFor: time.Second, Logger: log})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		time.Sleep(time.Second)
		f.set(nil)
		call(t, m)
		got := strings.Split(strings.TrimSpace(buf.String()), "\n")
		want := []string{
			`level=WARN msg="breaker opened" route=r1 from=closed to=open reason="consecutive failures" generation=1 class=transient open_for=1s`,
			`level=INFO msg="breaker state changed" route=r1 from=open to=half_open reason="open interval elapsed" generation=2`,
			`level=INFO msg="breaker state changed" route=r1 from=half_open to=closed reason="probes succeeded" generation=3`,
		}
		if len(got) != len(want) {
			t.Fatalf("log =\n%s\nwant\n%s", buf.String(), strings.Join(want, "\n"))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("log line %d = %s, want %s", i, got[i], want[i])
			}
		}
	})
}

// TestHookPanicReleasesProbeSlot: a hook that panics on the move to half-open
// (run after the probe slot was taken, before the probe) must not leave the
// slot taken, or the breaker would stay half-open with its probes busy forever.
func TestHookPanicReleasesProbeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := MustNew(Config{Trip: ConsecutiveFailures(1), OpenFor: time.Second, OnStateChange: func(tr Transition) {
			if tr.To == HalfOpen {
				panic("hook")
			}
		}})
		f := &scripted{err: fail(portico.Transient)}
		m := b.Wrap(f)
		call(t, m)
		time.Sleep(time.Second)
		f.set(nil)
		func() {
			defer func() {
				if r := recover(); r != "hook" {
					t.Fatalf("recover() = %v, want the hook's panic", r)
				}
			}()
			call(t, m)
		}()
		if n := b.probes.Load(); n != 0 {
			t.Fatalf("probes in flight after the hook panicked = %d, want 0", n)
		}
		if err := call(t, m); err != nil {
			t.Fatalf("next call = %v, want a successful probe", err)
		}
		if s := b.State(); s != Closed {
			t.Errorf("State() = %v, want closed", s)
		}
		if f.n() != 2 {
			t.Errorf("model calls = %d, want 2 (the panicking call never reached it)", f.n())
		}
	})
}
