package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestOutageNotEndedByAnEarlierOperation: an outage ends when a probe
// succeeds (package doc: "one operation at a time probes the server, and
// the first that succeeds ends the outage"). An operation that was already
// in flight when another one failed is no probe, yet its success ends the
// outage at once. Under load some operations time out while others, a few
// milliseconds older or luckier, still succeed, so the Store flaps between
// down and up (seen with 4 stacks over a real redis-server under -race:
// WARN unavailable / INFO available again after 1-5 ms, several times per
// instance in 10 ms), Probe's fail-fast window never holds, every flap
// costs the next calls a full Timeout, and the log gets a pair of records
// per flap.
func TestOutageNotEndedByAnEarlierOperation(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	s, err := New(Config{Client: c, Timeout: time.Second, Probe: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.do(context.Background(), func(context.Context) error { close(started); <-release; return nil })
	}()
	<-started // an operation under way, answered but not yet read
	if err := s.do(context.Background(), func(context.Context) error { return errors.New("i/o timeout") }); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("failing operation = %v, want ErrUnavailable", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("operation under way = %v, want nil", err)
	}
	if s.Available() {
		t.Error("an operation that started before the failure ended the outage; want it to last the Probe (an hour) until a probe succeeds")
	}
}
