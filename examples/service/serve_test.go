package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico/examples/internal/dial"
	"github.com/portico-llm/portico/redisstore/redistest"
)

// start runs the service on the fakes on a free port until the test ends
// and returns its base URL and a function that stops it and returns
// serve's error.
func start(t *testing.T, cfg config) (string, func() error) {
	t.Helper()
	cfg.addr, cfg.grace = "127.0.0.1:0", 5*time.Second
	for i := range dial.Providers {
		cfg.model[i] = dial.Providers[i].Model
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { stop() })
	return "http://" + addr, stop
}

// post sends one call for tenant, as server-sent events when stream.
func post(t *testing.T, url, tenant, body string, stream bool) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/v1/answer", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tenant != "" {
		req.Header.Set("X-Tenant-ID", tenant)
	}
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const prompt = `{"prompt": "Summarise this ticket: printer on fire.", "max_tokens": 64}`

// TestServeAnswers: a JSON answer names the route and usage; a stream sends
// chunk events, then a done event; a call without a tenant or a prompt is
// a 400.
func TestServeAnswers(t *testing.T) {
	url, _ := start(t, config{rpm: 600})
	resp := post(t, url, "tenant-1", prompt, false)
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	if a.Text == "" || a.Route == "" || a.OutputTokens != outputTokens || a.CostUSD <= 0 {
		t.Fatalf("answer %+v: want text, a route, %d output tokens and a cost", a, outputTokens)
	}

	resp = post(t, url, "tenant-1", prompt, true)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	names := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names[name]++
		}
	}
	if names["chunk"] == 0 || names["done"] != 1 || names["error"] != 0 {
		t.Fatalf("events %v: want chunks, then one done", names)
	}

	for _, c := range []struct{ tenant, body string }{{"", prompt}, {"tenant-1", `{"max_tokens": 5}`}, {"tenant-1", `not json`}} {
		if resp := post(t, url, c.tenant, c.body, false); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("tenant %q body %q: status %d, want 400", c.tenant, c.body, resp.StatusCode)
		}
	}
}

// TestServeTenantLimit: a tenant past its requests per minute gets 429
// with a Retry-After; another tenant is not held back by it.
func TestServeTenantLimit(t *testing.T) {
	url, _ := start(t, config{rpm: 2})
	for i := range 2 {
		if resp := post(t, url, "greedy", prompt, false); resp.StatusCode != 200 {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	resp := post(t, url, "greedy", prompt, false)
	var f failure
	json.NewDecoder(resp.Body).Decode(&f)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || f.Refuser != "client_limit" {
		t.Fatalf("third call: status %d, Retry-After %q, %+v; want 429 from client_limit with a Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), f)
	}
	if resp := post(t, url, "modest", prompt, false); resp.StatusCode != 200 {
		t.Fatalf("another tenant: status %d", resp.StatusCode)
	}
	// A call larger than the tenant's token bucket can never be admitted:
	// 400, not a 429 a client would retry forever.
	if resp := post(t, url, "modest", `{"prompt": "x", "max_tokens": 99999999}`, false); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a call larger than the bucket: status %d, want 400", resp.StatusCode)
	}
}

// TestServeSharedLimit: two instances over one Redis share a tenant's
// limit: 3 requests a minute admit 3 calls in all, not 3 each.
func TestServeSharedLimit(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := start(t, config{rpm: 3, redis: srv.Addr})
	b, _ := start(t, config{rpm: 3, redis: srv.Addr})
	ok := 0
	for i := range 6 {
		if resp := post(t, []string{a, b}[i%2], "tenant-7", prompt, false); resp.StatusCode == 200 {
			ok++
		}
	}
	if ok != 3 {
		t.Fatalf("%d of 6 calls admitted over two instances; want 3", ok)
	}
}

// TestServeGracefulShutdown: a stop while a call streams lets the call
// finish, and serve returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	url, stop := start(t, config{rpm: 600})
	resp := post(t, url, "tenant-1", prompt, true)
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	names := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names[name]++
		}
	}
	if names["done"] != 1 {
		t.Fatalf("events %v during the shutdown: want the call to finish", names)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
