package redisstore

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A Probe means what it says however long: with math.MaxInt64 an outage
// lasts (every operation fails fast, none reaches the network), rather than
// ending at once because the failure's time plus Probe wrapped around.
// Outside a synctest bubble, whose clock reads before the origin of mono's
// and so hides the overflow.
func TestHugeProbe(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	s, err := New(Config{Client: c, Probe: math.MaxInt64})
	if err != nil {
		t.Fatal(err)
	}
	s.down(errors.New("connection refused"))
	called := false
	err = s.do(context.Background(), func(context.Context) error { called = true; return nil })
	if called || !errors.Is(err, ErrUnavailable) {
		t.Errorf("operation during the outage: called %v, err %v; want not called, ErrUnavailable", called, err)
	}
}
