package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// lines keep this process's waiters of a shared key in line: only the one
// at the head asks the store again, when the wait the store gave it ends;
// the others wait their turn in order of arrival. Without them every
// waiter slept to the same instant and asked again, one was admitted and
// the rest slept again: round trips to the store grew with the square of
// the waiters. A key's line exists while it has waiters (no memory per idle
// key).
type lines struct {
	mu sync.Mutex
	m  map[string]*line
}

// line is one key's: turn holds one token, taken by the waiter at the head;
// n counts the waiters holding or waiting for it.
type line struct {
	turn chan struct{}
	n    int
}

// join returns key's line, counting the caller in; leave must follow.
func (ls *lines) join(key string) *line {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m == nil {
		ls.m = make(map[string]*line)
	}
	ln := ls.m[key]
	if ln == nil {
		ln = &line{turn: make(chan struct{}, 1)}
		ln.turn <- struct{}{}
		ls.m[key] = ln
	}
	ln.n++
	return ln
}

// leave counts the caller out of key's line ln, which it no longer holds.
func (ls *lines) leave(key string, ln *line) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ln.n--; ln.n == 0 {
		delete(ls.m, key)
	}
}

// quit gives back ln's turn, if held (ln not nil), and counts the caller
// out of key's line.
func (ls *lines) quit(key string, ln *line) {
	if ln != nil {
		ln.done()
		ls.leave(key, ln)
	}
}

// wait takes ln's turn: at once (waited false) when no one held it, else
// when the waiter ahead gives it back, or fails when ctx ends (ctx's
// error) or after max (errLineTimeout).
func (ln *line) wait(ctx context.Context, max time.Duration) (waited bool, err error) {
	select {
	case <-ln.turn:
		return false, nil
	default:
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ln.turn:
		return true, nil
	case <-ctx.Done():
		return true, ctx.Err()
	case <-t.C:
		return true, errLineTimeout
	}
}

// done gives ln's turn to the next waiter.
func (ln *line) done() { ln.turn <- struct{}{} }

// errLineTimeout ends a wait for the line that would outlast Config.MaxWait
// or the deadline.
var errLineTimeout = errors.New("ratelimit: waited in line past MaxWait")
