package effect

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// A TTL means what it says however long: with math.MaxInt64 a key pending
// in another process stays pending (Lease + TTL saturates instead of
// wrapping to a time in the past), and its effect is not run again.
func TestHugeTTLKeepsPendingKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, _ := NewMemoryStore(MemoryConfig{})
		cfg := Config{Store: store, TTL: math.MaxInt64}
		a, b := newRunner(t, cfg), newRunner(t, cfg)
		key := mustKey(t, "op", "ticket", `{}`)
		release := make(chan struct{})
		done := make(chan error)
		go func() {
			_, err := a.Do(context.Background(), key, func(context.Context) ([]byte, error) { <-release; return []byte(`1`), nil })
			done <- err
		}()
		synctest.Wait()
		go func() {
			time.Sleep(time.Second)
			close(release)
		}()
		res, err := b.Do(context.Background(), key, mustNotRun(t))
		if err != nil || string(res) != "1" {
			t.Errorf("Do of a key pending in another Runner = %s, %v, want its result", res, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("owner's Do = %v", err)
		}
	})
}
