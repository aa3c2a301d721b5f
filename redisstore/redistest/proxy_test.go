package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestProxyDropReply: the command runs on the server, its reply never
// reaches the client; go-redis's own retries then run it again.
func TestProxyDropReply(t *testing.T) {
	srv := Start(t)
	p := srv.Proxy(t)
	ctx := context.Background()
	direct := srv.Client(t)

	once := NewClient(p.Addr) // no retries
	defer once.Close()
	if err := once.Incr(ctx, "n").Err(); err != nil {
		t.Fatal(err)
	}
	p.DropReply("incr")
	if err := once.Incr(ctx, "n").Err(); !errors.Is(err, io.EOF) {
		t.Fatalf("INCR with its reply dropped: err = %v, want EOF", err)
	}
	if n, _ := direct.Get(ctx, "n").Int(); n != 2 {
		t.Fatalf("n = %d after two INCRs (one reply dropped), want 2", n)
	}

	retrying := redis.NewClient(&redis.Options{Addr: p.Addr, ContextTimeoutEnabled: true}) // MaxRetries 3
	defer retrying.Close()
	p.DropReply("INCR")
	got, err := retrying.Incr(ctx, "n").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got != 4 || p.Dropped() != 2 {
		t.Fatalf("retried INCR = %d with %d replies dropped, want 4 (applied twice) and 2", got, p.Dropped())
	}
}

// TestProxyDropReplyPassesErrors: an error reply (nothing ran) is
// delivered, and the drop waits for the next matching command.
func TestProxyDropReplyPassesErrors(t *testing.T) {
	srv := Start(t)
	p := srv.Proxy(t)
	ctx := context.Background()
	c := NewClient(p.Addr)
	defer c.Close()
	p.DropReply("EVAL")
	if err := c.EvalSha(ctx, "0000000000000000000000000000000000000000", nil).Err(); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("EVALSHA of an unknown script = %v, want NOSCRIPT delivered", err)
	}
	if err := c.Eval(ctx, "return 1", nil).Err(); !errors.Is(err, io.EOF) {
		t.Fatalf("EVAL after a NOSCRIPT = %v, want its reply dropped (EOF)", err)
	}
	if p.Dropped() != 1 {
		t.Fatalf("Dropped() = %d, want 1", p.Dropped())
	}
}

// TestProxyDelayAndReset: a delayed reply misses a short deadline; Reset
// cuts a command under way (the server ran it, the delay holds its
// reply: the test waits for the run, not a guessed time); the proxy
// keeps accepting.
func TestProxyDelayAndReset(t *testing.T) {
	srv := Start(t)
	p := srv.Proxy(t)
	c := NewClient(p.Addr)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p.Delay(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err := c.Ping(ctx).Err()
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("PING under a 1 s delay with a 20 ms deadline: err = %v, want a timeout", err)
	}
	// A connection ready (the timed-out one was closed; a new one's
	// handshake would wait out the delay), then a reply held longer than
	// any stall between the run and Reset.
	p.Delay(0)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p.Delay(time.Minute)
	errc := make(chan error, 1)
	go func() { errc <- c.Incr(context.Background(), "n").Err() }()
	direct := srv.Client(t)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); direct.Get(context.Background(), "n").Val() != "1"; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatal("INCR through the proxy did not reach the server in 10 s")
		}
	}
	p.Reset()
	if err := <-errc; !errors.Is(err, io.EOF) {
		t.Fatalf("INCR cut by Reset: err = %v, want EOF", err)
	}
	p.Delay(0)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING after Reset and Delay(0): %v", err)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// TestReadCommand: a RESP array gives its bytes and upper-cased name, an
// inline command its line, and a header of the wrong kind or a count out
// of range is malformed.
func TestReadCommand(t *testing.T) {
	for _, tc := range []struct{ in, raw, name, err string }{
		{in: "*2\r\n$3\r\nget\r\n$1\r\nk\r\n", raw: "*2\r\n$3\r\nget\r\n$1\r\nk\r\n", name: "GET"},
		{in: "ping extra\r\n", raw: "ping extra\r\n", name: "PING"},
		{in: "\r\n", raw: "\r\n"},
		{in: "*x\r\n", err: "redistest: malformed command"},
		{in: "*-1\r\n", err: "redistest: malformed command"},
		{in: "*1048577\r\n", err: "redistest: malformed command"},
		{in: "*1\r\n:3\r\nget\r\n", err: "redistest: malformed command"},
		{in: "*1\r\n$536870913\r\n", err: "redistest: malformed command"},
		{in: "*1\r\n$3\r\nge", err: "unexpected EOF"},
	} {
		raw, name, err := readCommand(bufio.NewReader(strings.NewReader(tc.in)))
		if got := fmt.Sprint(err); tc.err != "" && got != tc.err || tc.err == "" && err != nil {
			t.Errorf("readCommand(%q) error %v, want %q", tc.in, err, tc.err)
			continue
		}
		if string(raw) != tc.raw || name != tc.name {
			t.Errorf("readCommand(%q) = %q, %q, want %q, %q", tc.in, raw, name, tc.raw, tc.name)
		}
	}
}
