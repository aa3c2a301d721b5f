package respcache

import (
	"context"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func req(tenant, prompt string) *portico.Request {
	return &portico.Request{Model: "m", Messages: []portico.Message{portico.Text(portico.RoleUser, prompt)}, MaxOutputTokens: 100,
		Identity: portico.Identity{ClientKey: tenant}}
}

func mustNew(t testing.TB, cfg Config) *Cache {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// events records the events of the calls whose context it is in.
type events struct {
	mu sync.Mutex
	e  []string
}

func (o *events) Observe(_ context.Context, e portico.Event) {
	o.mu.Lock()
	o.e = append(o.e, e.Kind.String()+":"+e.Reason)
	o.mu.Unlock()
}
