package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico/redisstore/redistest"
)

// TestRun runs the program over a redis-server of its own, its phases
// short: every request is answered or refused by its tenant's limit,
// the strict client limit admits nothing beyond b + r·dt, the leased
// route limit nothing beyond its leases, and the leased route limits cost
// less than a round trip per request where the strict client limit costs
// one.
func TestRun(t *testing.T) {
	srv := redistest.Start(t)
	var out strings.Builder
	if err := run(&out, config{addr: srv.Addr, every: 10 * time.Millisecond,
		phases: []time.Duration{400 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	s := out.String()
	if m := regexp.MustCompile(`(?m)^all +\d+ +\d+ +\d+ +\d+ +\d+ +(\d+)$`).FindStringSubmatch(s); m == nil || m[1] != "0" {
		t.Errorf("failed requests %v, want 0", m)
	}
	if m := regexp.MustCompile(`client limit, strict .*: ([-+]\d+) requests`).FindStringSubmatch(s); m == nil || atoi(t, m[1]) > 0 {
		t.Errorf("client limit's excess %v, want at most 0", m)
	}
	if m := regexp.MustCompile(`route limit, leased .*: ([-+]\d+) requests.*bound L = (\d+)`).FindStringSubmatch(s); m == nil || atoi(t, m[1]) > atoi(t, m[2]) {
		t.Errorf("route limit's excess %v, want at most L", m)
	}
	var reqs, client, route float64 // over the phases
	for _, m := range regexp.MustCompile(`(?m)^(?:healthy|openai down|healed) +(\d+) +\d+ +[\d.]+ +([\d.]+) +([\d.]+)`).FindAllStringSubmatch(s, -1) {
		n := atof(t, m[1])
		reqs, client, route = reqs+n, client+n*atof(t, m[2]), route+n*atof(t, m[3])
	}
	if reqs == 0 || client/reqs < 0.99 || route/reqs >= 0.5 {
		t.Errorf("%.0f requests, %.3f round trips per request for the client limit, %.3f for the routes': want 1 and less than 0.5",
			reqs, client/max(reqs, 1), route/max(reqs, 1))
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.TrimPrefix(s, "+"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
