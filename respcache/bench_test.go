package respcache

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// benchReq is a request of a 2 KiB prompt with a system message and
// sampling parameters.
func benchReq() *portico.Request {
	r := req("tenant", strings.Repeat("a question about the weather ", 70))
	r.Messages = append([]portico.Message{portico.Text(portico.RoleSystem, "You are terse.")}, r.Messages...)
	r.Extra = map[string]any{"temperature": 0.2, "seed": 7}
	return r
}

// never is a Store that keeps nothing: every lookup misses.
type never struct{}

func (never) Get(context.Context, string) (*Entry, error)              { return nil, nil }
func (never) Set(context.Context, string, *Entry, time.Duration) error { return nil }

// BenchmarkHit: a request answered from memory.
func BenchmarkHit(b *testing.B) { benchCache(b, Config{}) }

// BenchmarkMiss: the same request always missing, over an answering
// fake: the key, the lookup and the call below.
func BenchmarkMiss(b *testing.B) { benchCache(b, Config{Store: never{}}) }

// BenchmarkNoCache: the fake alone, the miss's call below.
func BenchmarkNoCache(b *testing.B) {
	m, r := modeltest.NewFake(modeltest.Answer("a sunny answer")), benchReq()
	m.RecordLimit = -1
	for b.Loop() {
		m.Generate(context.Background(), r)
	}
}

func benchCache(b *testing.B, cfg Config) {
	f := modeltest.NewFake(modeltest.Answer("a sunny answer"))
	f.RecordLimit = -1
	m, r := mustNew(b, cfg).Wrap(f), benchReq()
	m.Generate(context.Background(), r)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}
