package fakecore

import (
	"sync"
	"time"
)

// Limit is one counter of a [Quota]: at most Max per window of Window,
// counted from the server's start. Max zero is unlimited; Window zero is
// one minute.
type Limit struct {
	Max    int
	Window time.Duration
}

// Quota is a model's rate-limit counters, each over its own fixed windows,
// so that what remains is deterministic for a given order of arrival. The
// zero Quota is ready; it is safe for concurrent use.
type Quota struct {
	mu   sync.Mutex
	win  []int64 // each counter's current window
	used []int   // what each counter counted in it
}

// Taken is what one request saw of a Quota: per counter, what remains
// after it (never negative) and the time until its window resets; Refused
// is the index of the counter that refused it, or -1.
type Taken struct {
	Remaining []int
	Reset     []time.Duration
	Refused   int
}

// Take counts n[i] on counter i at elapsed since the server's start,
// unless enforce and one counter with a Max would pass it: then the first
// such counter refuses and nothing is counted. limits and n are indexed
// alike, and every call passes the same number of them.
func (q *Quota) Take(elapsed time.Duration, enforce bool, limits []Limit, n ...int) Taken {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.win == nil {
		q.win, q.used = make([]int64, len(limits)), make([]int, len(limits))
	}
	t := Taken{Remaining: make([]int, len(limits)), Reset: make([]time.Duration, len(limits)), Refused: -1}
	for i, l := range limits {
		w := l.Window
		if w <= 0 {
			w = time.Minute
		}
		if win := int64(elapsed / w); win != q.win[i] {
			q.win[i], q.used[i] = win, 0
		}
		t.Reset[i] = w - elapsed%w
		if enforce && l.Max > 0 && q.used[i]+n[i] > l.Max && t.Refused < 0 {
			t.Refused = i
		}
	}
	for i, l := range limits {
		if t.Refused < 0 {
			q.used[i] += n[i]
		}
		t.Remaining[i] = max(0, l.Max-q.used[i])
	}
	return t
}
