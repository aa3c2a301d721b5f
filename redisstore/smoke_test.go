package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/portico-llm/portico/ratelimit"
	"github.com/portico-llm/portico/redisstore/internal/redistest"
)

// newStore starts a server and returns a Store over it with cfg's other
// fields.
func newStore(t testing.TB, cfg Config) (*Store, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	cfg.Client = srv.Client(t)
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, srv
}

func TestSmoke(t *testing.T) {
	s, _ := newStore(t, Config{})
	b := s.Buckets()
	lim := &ratelimit.Limits{Tokens: 600, TokenBurst: 100, Requests: 60, RequestBurst: 2, Period: time.Minute}
	ctx := context.Background()
	for i, want := range []string{"", "", "requests"} {
		w, which, err := b.Take(ctx, "k", lim, 10)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(i, w, which)
		if which != want {
			t.Fatalf("take %d: which = %q, want %q", i, which, want)
		}
	}
}
