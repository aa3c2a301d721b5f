package modeltest

import (
	"sync"
	"time"
)

// Budget is a retry budget for tests of hedging: it has the methods of
// package hedge's Budget and Refunder. Each Take waits RTT (a shared
// store's round trip; in a testing/synctest bubble, on virtual time) and
// grants a token while Tokens are left, negative Tokens meaning no end; it
// records what it granted, as "destination/clientKey", and what came back.
// The zero Budget grants nothing at once. Set the fields before use; its
// methods are safe for concurrent use.
type Budget struct {
	Tokens int
	RTT    time.Duration

	mu       sync.Mutex
	taken    []string
	refunded int
}

// Take takes a token for destination on behalf of clientKey after RTT, or
// reports false when none is left.
func (b *Budget) Take(destination, clientKey string) bool {
	if b.RTT > 0 {
		time.Sleep(b.RTT)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Tokens == 0 {
		return false
	}
	if b.Tokens > 0 {
		b.Tokens--
	}
	b.taken = append(b.taken, destination+"/"+clientKey)
	return true
}

// Refund records a token given back.
func (b *Budget) Refund(destination, clientKey string) {
	b.mu.Lock()
	b.refunded++
	b.mu.Unlock()
}

// Taken returns the tokens granted so far, in order, as
// "destination/clientKey".
func (b *Budget) Taken() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.taken...)
}

// Refunded returns how many tokens came back.
func (b *Budget) Refunded() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refunded
}
