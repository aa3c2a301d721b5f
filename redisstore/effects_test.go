package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestEffectOnceHundredInstances: 100 Runners, each with its own Store and
// client over one Redis, race on one execution key: the effect runs once
// and every caller gets its result.
func TestEffectOnceHundredInstances(t *testing.T) {
	srv := redistest.Start(t)
	key, err := effect.NewKey("op-1", "charge_card", json.RawMessage(`{"amount":100}`))
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	results := make([]string, 100)
	errs := make([]error, 100)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range 100 {
		r, err := effect.New(effect.Config{Store: newStore(t, srv, Config{}).Effects(), Poll: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		wg.Go(func() {
			start.Wait()
			res, err := r.Do(context.Background(), key, func(context.Context) ([]byte, error) {
				runs.Add(1)
				return []byte("charged"), nil
			})
			results[i], errs[i] = string(res), err
		})
	}
	start.Done()
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("the effect ran %d times, want 1", n)
	}
	for i := range results {
		if errs[i] != nil || results[i] != "charged" {
			t.Errorf("caller %d = (%q, %v), want (\"charged\", nil)", i, results[i], errs[i])
		}
	}
}

// TestEffectStore checks the Store contract on Redis: a record read back
// whole, PutIfAbsent keeping the first, Update as compare-and-swap on
// owner and state, and the key's expiry at the record's Expires.
func TestEffectStore(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Config{})
	e := s.Effects()
	ctx := context.Background()
	exp := time.Now().Add(time.Hour).Truncate(time.Millisecond).Add(300 * time.Microsecond)
	lease := time.Now().Add(time.Minute)
	pending := effect.Record{State: effect.Pending, Owner: "a", Lease: lease, Expires: exp}
	if _, ok, err := e.Get(ctx, "k"); ok || err != nil {
		t.Fatalf("Get of an absent key = (%v, %v), want (false, nil)", ok, err)
	}
	if got, ok, err := e.PutIfAbsent(ctx, "k", pending); !ok || err != nil || got.Owner != "a" {
		t.Fatalf("first PutIfAbsent = (%+v, %v, %v), want stored", got, ok, err)
	}
	other := pending
	other.Owner = "b"
	got, ok, err := e.PutIfAbsent(ctx, "k", other)
	if ok || err != nil || got.Owner != "a" || got.State != effect.Pending || !got.Lease.Equal(lease) || !got.Expires.Equal(exp) {
		t.Fatalf("second PutIfAbsent = (%+v, %v, %v), want the first record, not stored", got, ok, err)
	}
	// A claim resent with its token is its own: replaced, reported stored.
	resent := pending
	resent.Lease = lease.Add(time.Second)
	if got, ok, err := e.PutIfAbsent(ctx, "k", resent); !ok || err != nil || !got.Lease.Equal(resent.Lease) {
		t.Fatalf("PutIfAbsent of the same token's claim = (%+v, %v, %v), want stored", got, ok, err)
	}
	if got, _, _ := e.Get(ctx, "k"); !got.Lease.Equal(resent.Lease) {
		t.Fatalf("Get after the resent claim = %+v, want its lease", got)
	}
	pending = resent
	// The key expires at Expires, rounded down to the millisecond.
	at, err := s.c.PExpireTime(ctx, s.key("fx", "k")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if want := exp.Truncate(time.Millisecond); at != time.Duration(want.UnixMilli())*time.Millisecond {
		t.Errorf("PEXPIRETIME = %v, want %v", at, time.Duration(want.UnixMilli())*time.Millisecond)
	}
	done := effect.Record{State: effect.Failed, Class: portico.Permanent, Reason: "declined", Result: []byte{0, 1, 255}, Owner: "a", Expires: exp}
	for _, tc := range []struct {
		prev effect.Record
		want bool
	}{
		{other, false}, // another owner
		{effect.Record{State: effect.Completed, Owner: "a"}, false}, // another state
		{pending, true},
		{pending, false}, // moved already
	} {
		if ok, err := e.Update(ctx, "k", tc.prev, done); ok != tc.want || err != nil {
			t.Errorf("Update from (%v, %q) = (%v, %v), want %v", tc.prev.State, tc.prev.Owner, ok, err, tc.want)
		}
	}
	got, ok, err = e.Get(ctx, "k")
	if !ok || err != nil || got.State != effect.Failed || got.Class != portico.Permanent || got.Reason != "declined" ||
		string(got.Result) != "\x00\x01\xff" || !got.Lease.IsZero() {
		t.Errorf("Get after Update = (%+v, %v, %v), want the Failed record", got, ok, err)
	}
	// A record that expires now is absent at once: release.
	released := effect.Record{State: effect.Failed, Class: portico.Rejected, Owner: "a", Expires: time.Now()}
	if ok, err := e.Update(ctx, "k", done, released); !ok || err != nil {
		t.Fatalf("release = (%v, %v)", ok, err)
	}
	if _, ok, err := e.Get(ctx, "k"); ok || err != nil {
		t.Errorf("Get after a release = (%v, %v), want absent", ok, err)
	}
	if ok, err := e.Update(ctx, "absent", pending, done); ok || err != nil {
		t.Errorf("Update of an absent key = (%v, %v), want (false, nil)", ok, err)
	}
	if err := s.c.HSet(ctx, s.key("fx", "bad"), "d", "{").Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Get(ctx, "bad"); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("Get of a malformed record = %v, want a decoding error", err)
	}
}
