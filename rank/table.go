package rank

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/mono"
)

// DefaultAlpha is the moving averages' gain when a layer sets none: each new
// sample weighs 1/8, the gain of TCP's smoothed round-trip time (RFC 6298).
const DefaultAlpha = 0.125

// Table holds what a routing layer learnt about each of its routes from the
// calls it placed: the measured fields of [Candidate]. It is safe for
// concurrent use and takes no lock: each route's figures are atomics, 64
// bytes per route.
type Table struct {
	alpha  float64
	routes []stats
}

type stats struct {
	latency, ttft, errRate atomicFloat
	inFlight               atomic.Int64
	observed, ttftSeen     atomic.Int64
	failedAt               atomic.Int64 // mono.Now of the last failure, plus 1; 0: never
}

// NewTable returns a Table for n routes whose moving averages give each new
// sample the weight alpha, in (0, 1]; zero means [DefaultAlpha]. It fails, with
// an error starting "rank:", when alpha is outside [0, 1].
func NewTable(n int, alpha float64) (*Table, error) {
	if !(alpha >= 0 && alpha <= 1) {
		return nil, errors.New("rank: alpha outside [0, 1]")
	}
	return &Table{alpha: cmp.Or(alpha, DefaultAlpha), routes: make([]stats, n)}, nil
}

// Fill sets the measured fields of c from route c.Index's figures, draws
// its Draw, and sets Weight to 1 when it is zero.
func (t *Table) Fill(c *Candidate) {
	st := &t.routes[c.Index]
	c.Latency = time.Duration(st.latency.load())
	c.TTFT = time.Duration(st.ttft.load())
	c.ErrorRate = st.errRate.load()
	c.InFlight = int(st.inFlight.Load())
	c.Observed = int(st.observed.Load())
	c.SinceFailure = -1
	if at := st.failedAt.Load(); at != 0 {
		c.SinceFailure = max(mono.Now()-time.Duration(at-1), 0)
	}
	if c.Weight == 0 {
		c.Weight = 1
	}
	c.Draw = 1 - rand.Float64() // (0, 1]: -ln(Draw) is finite
}

// Start counts one more call in flight on route i; [Table.Done] ends it.
func (t *Table) Start(i int) { t.routes[i].inFlight.Add(1) }

// Done ends a call on route i that [Table.Start] counted, which took latency
// (ttft to its first chunk, 0 when none) and ended with err. By
// [portico.FaultOf]: a success is a latency sample and lowers the error
// rate; the route's fault raises it and marks the failure's time; any
// other outcome (the caller's, the request's, a local refusal, an
// unanswered failure) says nothing about the route and moves only the
// in-flight count.
func (t *Table) Done(i int, err error, latency, ttft time.Duration) {
	st := &t.routes[i]
	st.inFlight.Add(-1)
	f, _ := portico.FaultOf(err)
	if f != portico.FaultNone && f != portico.FaultRoute {
		return
	}
	first := st.observed.Add(1) == 1
	fault := 0.0
	if f == portico.FaultRoute {
		fault = 1
		st.failedAt.Store(int64(mono.Now()) + 1)
	}
	st.errRate.ewma(fault, t.alpha, first)
	if err == nil {
		st.latency.ewma(float64(max(latency, 1)), t.alpha, st.latency.load() == 0)
	}
	if ttft > 0 {
		st.ttft.ewma(float64(ttft), t.alpha, st.ttftSeen.Add(1) == 1)
	}
}

// atomicFloat is a float64 updated with compare-and-swap.
type atomicFloat struct{ v atomic.Uint64 }

func (a *atomicFloat) load() float64 { return math.Float64frombits(a.v.Load()) }

// ewma folds x into the average with gain alpha; first sets it outright.
func (a *atomicFloat) ewma(x, alpha float64, first bool) {
	for {
		old := a.v.Load()
		nv := x
		if !first {
			nv = alpha*x + (1-alpha)*math.Float64frombits(old)
		}
		if a.v.CompareAndSwap(old, math.Float64bits(nv)) {
			return
		}
	}
}
