package route

import (
	"strings"
	"testing"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/rank"
)

// benchPick measures Balancer.Pick plus Done over 8 replicas.
func benchPick(b *testing.B, s Strategy, req *portico.Request, tokens int) {
	rs, _ := replicas(8)
	bal := mustBalancer(b, rs, s)
	info := PickInfo{Request: req, InputTokens: tokens}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		pr, err := bal.Pick(info)
		if err != nil {
			b.Fatal(err)
		}
		pr.Done(DoneInfo{})
	}
	reportCPU(b, start)
}

// reportCPU reports the CPU nanoseconds per op spent since start.
func reportCPU(b *testing.B, start time.Duration) {
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

// prompt16K is an agent-like request: a 4 KB system prompt and 12 KB of
// conversation, 16 KB in all.
func prompt16K() *portico.Request {
	body := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 400)
	req := &portico.Request{Messages: []portico.Message{
		portico.Text(portico.RoleSystem, body[:4096]),
		portico.Text(portico.RoleUser, body[:6144]),
		portico.Text(portico.RoleAssistant, body[:2048]),
		portico.Text(portico.RoleTool, body[:4096]),
	}}
	req.Identity.SessionID = "session-1"
	return req
}

func BenchmarkPick(b *testing.B) {
	small := userReq("hello")
	big := prompt16K()
	b.Run("round-robin", func(b *testing.B) { benchPick(b, RoundRobin{}, small, 10) })
	b.Run("least-in-flight", func(b *testing.B) { benchPick(b, LeastInFlight{}, small, 10) })
	b.Run("least-in-flight-seeded", func(b *testing.B) { benchPick(b, LeastInFlight{Seed: 1}, small, 10) })
	b.Run("affinity-short", func(b *testing.B) { benchPick(b, Affinity{}, small, 10) })
	b.Run("affinity-long", func(b *testing.B) { benchPick(b, Affinity{}, big, 4096) })
	b.Run("prefix-aware-16KB", func(b *testing.B) { benchPick(b, PrefixAware{}, big, 4096) })
	b.Run("round-robin-16KB", func(b *testing.B) { benchPick(b, RoundRobin{}, big, 0) })
}

func BenchmarkHashPrompt16KB(b *testing.B) {
	req := prompt16K()
	buf := make([]block, 0, 128)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		buf = hashPrompt(req, 256, buf[:0])
	}
	reportCPU(b, start)
}

func BenchmarkRouterPick(b *testing.B) {
	r, _ := NewRouter(RouterConfig{Routes: threeRoutes(&switchHealth{}), Policy: rank.Weighted{Cost: 1, Latency: 1, ErrorRate: 1}.Score})
	info := PickInfo{Request: userReq("hello"), InputTokens: 10}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		pr, _ := r.Pick(info)
		pr.Done(DoneInfo{})
	}
	reportCPU(b, start)
}

func BenchmarkHeuristicScore(b *testing.B) {
	req := prompt16K()
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		HeuristicScore(req)
	}
	reportCPU(b, start)
}
