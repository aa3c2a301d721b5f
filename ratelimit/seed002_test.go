package ratelimit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/portico-llm/portico"
)

// This file reproduces the direction of seed 002's simulation ("who goes
// first") with the Limiter's own queue and a fake model, under synctest.
//
// The seed's setup: 4 slots, ~85% load, time in steps; a program is a chain
// of calls, each of 1 + int(Exp(mean 3)) steps of work, separated by tool
// pauses of 1..6 steps; programs arrive as a Poisson process. Two loads:
// "unequal" (4 in 5 programs make 1 + int(Exp(mean 1)) calls, 1 in 5 make
// 1 + int(Exp(mean 19))) at 0.186 programs/step, and "seven" (every program 7
// calls) at 0.138 programs/step. Means are over programs arriving after the
// first 10% of the run; "short" are programs of at most 2 calls, "long" of at
// least 20.
//
// What differs from the seed's script: there the engine re-picks the 4 calls
// to advance at every step (preemptive, and PLAS counts the running call's
// service); here a call holds its slot of the in-flight cap until it ends
// (the Limiter never preempts a call it admitted), PLAS counts the service of
// finished calls in discrete levels (Quantum 1 step, 16 levels), and the
// random streams are Go's, not Python's. So the numbers differ; the
// direction is what the seed claims and what the test asserts. The numbers
// are seed002steps_test.go's: the seed's step simulation, its random
// stream, ranked by the queue's own rule.

const simStep = time.Millisecond

// simSeed fixes the workload. The direction holds for every seed tried:
// over seeds 1..6 (60,000 steps) PLAS's mean over all programs beat FCFS per
// call's by 2.3 to 4.4 steps (paired: the three orders serve the same
// workload), mean 3.2, sd 0.7, so the smallest gap the test asserts, PLAS
// against FCFS per call for all programs, is about 4.5 sd from zero; the
// other gaps are larger (short programs 6.4 vs 10.8: 40%; seven calls FCFS per
// program 64 vs PLAS 85: 25%).
const simSeed = 1

type simProgram struct {
	arrive time.Duration
	work   []int // steps per call
	pauses []int // steps of tool pause after each call but the last
}

func simWorkload(seed uint64, perStep float64, steps int, calls func(*rand.Rand) int) []simProgram {
	rng := rand.New(rand.NewPCG(seed, 2))
	var ps []simProgram
	for t := rng.ExpFloat64() / perStep; t < float64(steps); t += rng.ExpFloat64() / perStep {
		n := calls(rng)
		p := simProgram{arrive: time.Duration(float64(simStep) * float64(int(t)+1))}
		for i := range n {
			p.work = append(p.work, 1+int(rng.ExpFloat64()*3))
			if i < n-1 {
				p.pauses = append(p.pauses, 1+rng.IntN(6))
			}
		}
		ps = append(ps, p)
	}
	return ps
}

func unequalCalls(rng *rand.Rand) int {
	m := 2.0
	if rng.Float64() >= 0.8 {
		m = 20
	}
	return 1 + int(rng.ExpFloat64()*(m-1))
}

func sevenCalls(*rand.Rand) int { return 7 }

type simResult struct{ all, short, long float64 }

// simulate runs the workload through a Limiter with 4 slots and an unbounded
// queue in the given order, and returns the mean program durations in steps.
func simulate(t *testing.T, ps []simProgram, steps int, order Order, beta float64) simResult {
	var res simResult
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limits: Limits{MaxInFlight: 4}, Queue: Queue{Size: 1 << 20, Order: order, PLAS: PLASConfig{Quantum: simStep, Levels: 16, Starvation: beta}}})
		m := l.Wrap(portico.ModelFunc(func(ctx context.Context, r *portico.Request) (*portico.Response, error) {
			time.Sleep(time.Duration(r.MaxOutputTokens) * simStep) // the call's work
			return &portico.Response{}, nil
		}))
		start := time.Now()
		ctx, cancel := context.WithDeadline(t.Context(), start.Add(time.Duration(steps)*simStep))
		defer cancel()
		var mu sync.Mutex
		var sumAll, sumShort, sumLong float64
		var nAll, nShort, nLong int
		var wg sync.WaitGroup
		for i, p := range ps {
			time.Sleep(time.Until(start.Add(p.arrive)))
			wg.Go(func() {
				r := &portico.Request{Identity: portico.Identity{SessionID: fmt.Sprint(i)}}
				for j, w := range p.work {
					r.MaxOutputTokens = w
					if _, err := m.Generate(ctx, r); err != nil {
						return // the run ended first
					}
					if j < len(p.pauses) {
						time.Sleep(time.Duration(p.pauses[j]) * simStep)
					}
				}
				if p.arrive <= time.Duration(steps/10)*simStep {
					return
				}
				d := float64(time.Since(start.Add(p.arrive))) / float64(simStep)
				mu.Lock()
				defer mu.Unlock()
				sumAll, nAll = sumAll+d, nAll+1
				if len(p.work) <= 2 {
					sumShort, nShort = sumShort+d, nShort+1
				}
				if len(p.work) >= 20 {
					sumLong, nLong = sumLong+d, nLong+1
				}
			})
		}
		wg.Wait()
		res = simResult{sumAll / float64(nAll), sumShort / float64(max(nShort, 1)), sumLong / float64(max(nLong, 1))}
	})
	return res
}

func TestSeed002Orders(t *testing.T) {
	steps := 60_000
	if testing.Short() || raceEnabled {
		steps = 20_000
	}
	orders := []Order{FCFSCall, PLAS, FCFSProgram}

	unequal := simWorkload(simSeed, 0.186, steps, unequalCalls)
	u := map[Order]simResult{}
	for _, o := range orders {
		u[o] = simulate(t, unequal, steps, o, math.Inf(1))
		t.Logf("unequal  %-12v all %6.1f  short %5.1f  long %6.1f", o, u[o].all, u[o].short, u[o].long)
	}
	seven := simWorkload(simSeed, 0.138, steps, sevenCalls)
	s := map[Order]simResult{}
	for _, o := range orders {
		s[o] = simulate(t, seven, steps, o, math.Inf(1))
		t.Logf("7 calls  %-12v all %6.1f", o, s[o].all)
	}
	if !(u[PLAS].short < u[FCFSCall].short && u[PLAS].short < u[FCFSProgram].short) {
		t.Errorf("unequal lengths: PLAS short %.1f, want below FCFS/call %.1f and FCFS/program %.1f (seed: 5.5 < 9.6, 37.1)", u[PLAS].short, u[FCFSCall].short, u[FCFSProgram].short)
	}
	if !(u[PLAS].all < u[FCFSCall].all && u[PLAS].all < u[FCFSProgram].all) {
		t.Errorf("unequal lengths: PLAS all %.1f, want below FCFS/call %.1f and FCFS/program %.1f (seed: 44.8 < 47.1, 65.2)", u[PLAS].all, u[FCFSCall].all, u[FCFSProgram].all)
	}
	if !(s[FCFSProgram].all < s[PLAS].all) {
		t.Errorf("7 calls each: FCFS/program %.1f, want below PLAS %.1f (seed: 67.4 < 100.6)", s[FCFSProgram].all, s[PLAS].all)
	}
	// ATLAS beside PLAS: the seed's programs are chains of calls, so a
	// program's critical path is its attained service and ATLAS serves
	// them exactly as PLAS does (TestATLASCriticalPath shows where they
	// part: calls in parallel). Runs differ a little (the order of calls
	// ending at one instant), so within 3%: PLAS's own runs differ by
	// about 0.1% overall, and the short programs' small mean by up to
	// about 1% under the race detector's scheduling.
	at := simulate(t, unequal, steps, ATLAS, math.Inf(1))
	t.Logf("unequal  %-12v all %6.1f  short %5.1f  long %6.1f", ATLAS, at.all, at.short, at.long)
	for _, d := range [][2]float64{{at.all, u[PLAS].all}, {at.short, u[PLAS].short}, {at.long, u[PLAS].long}} {
		if math.Abs(d[0]-d[1]) > 0.03*d[1] {
			t.Errorf("unequal lengths: ATLAS %+v, want PLAS's %+v within 3%% (chains of calls)", at, u[PLAS])
			break
		}
	}
	// The seed's PLAS has no starvation guard, hence Starvation +Inf above.
	// With a guard (β = 3) long programs wait less and the seven-call penalty
	// shrinks, while short programs still finish well before FCFS per call.
	gu := simulate(t, unequal, steps, PLAS, 3)
	gs := simulate(t, seven, steps, PLAS, 3)
	t.Logf("guarded PLAS (β=3): unequal all %.1f short %.1f long %.1f; 7 calls all %.1f", gu.all, gu.short, gu.long, gs.all)
	if !(gu.long < u[PLAS].long && gs.all < s[PLAS].all && gu.short < u[FCFSCall].short) {
		t.Errorf("guarded PLAS: long %.1f (unguarded %.1f), 7 calls %.1f (unguarded %.1f), short %.1f (FCFS/call %.1f); want the first two lower, short still below FCFS/call",
			gu.long, u[PLAS].long, gs.all, s[PLAS].all, gu.short, u[FCFSCall].short)
	}
}
