package respcache

import (
	"cmp"
	"container/list"
	"context"
	"sync"
	"time"
)

// Defaults of [NewMemory].
const (
	DefaultMaxEntries = 10_000
	DefaultMaxBytes   = 64 << 20
)

// Memory is the in-process [Store]: a least-recently-used list bounded by
// entries and by bytes (an entry's Size), entries expiring at their TTL.
// Build it with [NewMemory]; it is safe for concurrent use.
type Memory struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	ll         *list.List // front: most recently used
	m          map[string]*list.Element
}

type memEntry struct {
	key     string
	e       *Entry
	size    int
	expires time.Time
}

// NewMemory returns a Memory of at most maxEntries entries and maxBytes
// bytes; zero or negative means [DefaultMaxEntries] (10,000) and
// [DefaultMaxBytes] (64 MiB). An entry larger than maxBytes is not kept.
func NewMemory(maxEntries, maxBytes int) *Memory {
	return &Memory{maxEntries: cmp.Or(max(maxEntries, 0), DefaultMaxEntries), maxBytes: cmp.Or(max(maxBytes, 0), DefaultMaxBytes),
		ll: list.New(), m: map[string]*list.Element{}}
}

var _ Store = (*Memory)(nil)

// Get implements [Store.Get]: the entry, made the most recently used, or
// nil when absent or expired. It never fails.
func (s *Memory) Get(_ context.Context, key string) (*Entry, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	el := s.m[key]
	if el == nil {
		return nil, nil
	}
	me := el.Value.(*memEntry)
	if !now.Before(me.expires) {
		s.remove(el)
		return nil, nil
	}
	s.ll.MoveToFront(el)
	return me.e, nil
}

// Set implements [Store.Set], evicting the least recently used entries
// beyond the bounds. It never fails.
func (s *Memory) Set(_ context.Context, key string, e *Entry, ttl time.Duration) error {
	size := e.Size()
	if size > s.maxBytes || ttl <= 0 {
		return nil
	}
	me := &memEntry{key: key, e: e, size: size, expires: time.Now().Add(ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.m[key]; el != nil {
		s.remove(el)
	}
	s.m[key] = s.ll.PushFront(me)
	s.bytes += size
	for s.ll.Len() > s.maxEntries || s.bytes > s.maxBytes {
		s.remove(s.ll.Back())
	}
	return nil
}

// Len returns the number of entries held, expired ones not yet dropped
// included.
func (s *Memory) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ll.Len()
}

func (s *Memory) remove(el *list.Element) {
	me := s.ll.Remove(el).(*memEntry)
	delete(s.m, me.key)
	s.bytes -= me.size
}
