package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
	"github.com/portico-llm/portico/redisstore/redistest"
	"github.com/portico-llm/portico/respcache"
)

// TestRespCacheShared: an answer one instance cached is a hit for
// another (the same tenant), never for another tenant; the key in Redis
// holds no prompt text and no tenant id; the server expires it at the
// TTL; a streamed hit is a stream.
//
// The TTL is a minute, so that no stall of a loaded machine expires a
// key before the hits; the expiry is checked on the server's record (the
// keys' PTTL), then brought forward there (PEXPIRE) for the miss after
// it, instead of waiting for it.
func TestRespCacheShared(t *testing.T) {
	const ttl = time.Minute
	srv := redistest.Start(t)
	f := modeltest.NewFake(modeltest.Answer("a shared answer"))
	var caches [2]*respcache.Cache
	var models [2]portico.Model
	for i := range caches {
		c, err := respcache.New(respcache.Config{Store: newStore(t, srv, Config{}).RespCache(), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		caches[i], models[i] = c, c.Wrap(f)
	}
	req := func(tenant string) *portico.Request {
		return &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "secret prompt")},
			Identity: portico.Identity{ClientKey: tenant}}
	}
	ctx := context.Background()
	written := time.Now()
	models[0].Generate(ctx, req("tenant-a"))
	r := req("tenant-a")
	var streamed strings.Builder
	r.OnChunk = func(c portico.Chunk) error { streamed.WriteString(c.Text); return nil }
	resp, err := models[1].Generate(ctx, r)
	if err != nil || resp.Text != "a shared answer" || streamed.String() != resp.Text || f.Count() != 1 {
		t.Fatalf("the other instance's streamed hit = %+v, %v, streamed %q, after %d calls; want a hit", resp, err, streamed.String(), f.Count())
	}
	models[1].Generate(ctx, req("tenant-b"))
	if f.Count() != 2 {
		t.Errorf("another tenant's request: %d calls, want 2 (no cross-tenant hit)", f.Count())
	}
	keys := srv.Client(t).Keys(ctx, "*").Val()
	if len(keys) != 2 {
		t.Errorf("keys = %v, want 2", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, "secret") || strings.Contains(k, "tenant") {
			t.Errorf("key %q holds the prompt or the tenant", k)
		}
		if left, least := srv.Client(t).PTTL(ctx, k).Val(), ttl-time.Since(written)-time.Millisecond; left < least || left > ttl {
			t.Errorf("key %q TTL %v, want within [%v, %v]: the TTL from its write", k, left, least, ttl)
		}
	}
	if s := caches[1].Stats(); s != (respcache.Stats{Hits: 1, Misses: 1}) {
		t.Errorf("instance 2 stats = %+v, want 1 hit, 1 miss", s)
	}
	direct := srv.Client(t)
	for _, k := range keys {
		direct.PExpire(ctx, k, time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); direct.Exists(ctx, keys...).Val() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("keys not expired 10 s after PEXPIRE 1 ms")
		}
	}
	models[1].Generate(ctx, req("tenant-a"))
	if f.Count() != 3 {
		t.Errorf("after the TTL: %d calls, want 3", f.Count())
	}
}

// TestRespCacheStoreDown: a cache whose server is gone misses and calls
// below, within the Store's timeout.
func TestRespCacheStoreDown(t *testing.T) {
	srv := redistest.Start(t)
	c, err := respcache.New(respcache.Config{Store: newStore(t, srv, Config{Timeout: 50 * time.Millisecond}).RespCache()})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	f := modeltest.NewFake()
	m := c.Wrap(f)
	start := time.Now()
	for range 2 {
		if _, err := m.Generate(context.Background(), &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}}); err != nil {
			t.Fatal(err)
		}
	}
	if f.Count() != 2 || time.Since(start) > time.Second {
		t.Errorf("with the server down: %d calls in %v, want 2, promptly", f.Count(), time.Since(start))
	}
}

// BenchmarkRespCacheHit: a request of a 2 KiB prompt answered from Redis
// (a key, one GET, the entry decoded).
func BenchmarkRespCacheHit(b *testing.B) {
	srv := redistest.Start(b)
	c, err := respcache.New(respcache.Config{Store: newStore(b, srv, Config{}).RespCache()})
	if err != nil {
		b.Fatal(err)
	}
	m := c.Wrap(modeltest.NewFake(modeltest.Answer("a sunny answer")))
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, strings.Repeat("a question about the weather ", 70))},
		MaxOutputTokens: 100, Extra: map[string]any{"temperature": 0.2}}
	m.Generate(context.Background(), req)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
	if c.Stats().Misses != 1 {
		b.Fatalf("stats %+v, want one miss", c.Stats())
	}
}
