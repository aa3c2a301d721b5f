package modeltest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/portico-llm/portico"
)

// BrokenJSON is the Text of an answer under [FaultInvalidJSON]: the start of a
// JSON object that never ends, so every JSON parser rejects it.
const BrokenJSON = `{"answer": "unterminated`

// FaultConfig configures [Faults]. The zero FaultConfig injects nothing.
type FaultConfig struct {
	// Seed makes the choice of faults reproducible: the same Seed and Rates give
	// every call index the same FaultKind, whatever the goroutine interleaving.
	Seed uint64
	// Rates maps each FaultKind to the fraction of calls, in [0, 1], that get it.
	// The fractions must sum to at most 1; the remaining calls pass through. A
	// nil map injects nothing. FaultNone is not a valid key.
	Rates map[FaultKind]float64
	// RetryAfter is the hint carried by injected 429s. 0 means 1 s; negative
	// means the 429 carries no hint.
	RetryAfter time.Duration
	// SlowTTFT is the extra delay of FaultSlowTTFT before the inner Model is
	// called. 0 means 10 s.
	SlowTTFT time.Duration
	// StallAfter is how many chunks FaultStall lets through before blocking; 0
	// (the default) stalls before the first token.
	StallAfter int
	// Timeout is how long FaultTimeout waits, after the inner Model returned,
	// before reporting the ambiguous timeout (the rest of the client's timeout).
	// 0 means no extra wait.
	Timeout time.Duration
	// OnFault, when non-nil, is called with the call index and the FaultKind
	// before each injected fault (not for FaultNone), synchronously on the
	// caller's goroutine. It must be safe for concurrent use.
	OnFault func(n int, kind FaultKind)
}

// Faults is a fault-injecting middleware: [Faults.Wrap] returns a Model that, for
// the fraction of calls FaultConfig.Rates gives each [FaultKind], fails or
// degrades the call in that way instead of (or around) calling the wrapped Model
// (real events on a small fraction of calls, as the Principles of Chaos
// Engineering put it).
//
// The choice is deterministic per call index: call n (counting from 0 over every
// Model that this Faults wrapped, in arrival order) gets the fault [Faults.Kind]
// returns for n, a pure function of Seed and n drawn from a PCG generator
// (math/rand/v2) seeded with (Seed, n). So under any concurrency the counts of
// each kind over N calls are exactly reproducible; which request gets call index
// n depends on the arrival order.
//
// Faults is safe for concurrent use. A call that passes through costs an atomic
// increment and one PCG draw, and does not allocate.
type Faults struct {
	cfg   FaultConfig
	cum   [numFaultKinds]float64 // cum[k]: upper bound of kind k's share of [0, 1)
	n     atomic.Int64
	count [numFaultKinds]atomic.Int64
}

// NewFaults returns a Faults built from cfg. It returns an error, whose message
// starts with "modeltest:", when a rate is outside [0, 1] or not a number, the
// rates sum to more than 1, a key is not an injectable FaultKind, or a duration
// or StallAfter is negative (RetryAfter may be negative).
func NewFaults(cfg FaultConfig) (*Faults, error) {
	f := &Faults{cfg: cfg}
	f.cfg.RetryAfter, f.cfg.SlowTTFT = cmp.Or(f.cfg.RetryAfter, time.Second), cmp.Or(f.cfg.SlowTTFT, 10*time.Second)
	switch {
	case cfg.SlowTTFT < 0:
		return nil, errors.New("modeltest: negative FaultConfig.SlowTTFT")
	case cfg.Timeout < 0:
		return nil, errors.New("modeltest: negative FaultConfig.Timeout")
	case cfg.StallAfter < 0:
		return nil, errors.New("modeltest: negative FaultConfig.StallAfter")
	}
	var rates [numFaultKinds]float64
	for k, r := range cfg.Rates {
		if k == FaultNone || k >= numFaultKinds {
			return nil, fmt.Errorf("modeltest: FaultConfig.Rates has invalid kind %v", k)
		}
		if !(r >= 0 && r <= 1) {
			return nil, fmt.Errorf("modeltest: FaultConfig.Rates[%v] = %v, want a fraction in [0, 1]", k, r)
		}
		rates[k] = r
	}
	sum := 0.0
	for k := FaultNone + 1; k < numFaultKinds; k++ {
		sum += rates[k]
		f.cum[k] = sum
	}
	if sum > 1+1e-9 {
		return nil, fmt.Errorf("modeltest: FaultConfig.Rates sum to %v, want at most 1", sum)
	}
	return f, nil
}

// MustFaults is like [NewFaults] but panics on an invalid cfg.
func MustFaults(cfg FaultConfig) *Faults {
	f, err := NewFaults(cfg)
	if err != nil {
		panic(err)
	}
	return f
}

// Kind returns the FaultKind that call index n gets: a pure function of the
// Seed, the Rates and n.
func (f *Faults) Kind(n int) FaultKind {
	var p rand.PCG
	p.Seed(f.cfg.Seed, splitmix(uint64(n)))
	u := float64(p.Uint64()>>11) / (1 << 53)
	for k := FaultNone + 1; k < numFaultKinds; k++ {
		if u < f.cum[k] {
			return k
		}
	}
	return FaultNone
}

// splitmix spreads consecutive call indexes over the generator's stream space
// (SplitMix64's finaliser).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Calls returns how many calls the wrapped Models have received.
func (f *Faults) Calls() int { return int(f.n.Load()) }

// Count returns how many calls got kind k so far; Count(FaultNone) counts the
// calls passed through untouched.
func (f *Faults) Count(k FaultKind) int {
	if k >= numFaultKinds {
		return 0
	}
	return int(f.count[k].Load())
}

// Counts returns the calls per FaultKind so far, FaultNone included, listing
// only the kinds that occurred.
func (f *Faults) Counts() map[FaultKind]int {
	m := make(map[FaultKind]int)
	for k := range numFaultKinds {
		if c := f.count[k].Load(); c > 0 {
			m[k] = int(c)
		}
	}
	return m
}

// Wrap returns next wrapped in fault injection; the method value f.Wrap is a
// [portico.Middleware]. Wrap panics if next is nil, a typed nil included ([portico.IsNil]).
func (f *Faults) Wrap(next portico.Model) portico.Model {
	portico.PanicIfNil(next, "modeltest: Faults.Wrap of a nil Model")
	return &faultModel{f: f, next: next}
}

type faultModel struct {
	f    *Faults
	next portico.Model
}

// Generate decides the call's fault (see [Faults]) and injects it. A nil req
// is passed to the wrapped Model as it is, uncounted: there is nothing to
// inject a fault into.
func (m *faultModel) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req == nil {
		return m.next.Generate(ctx, req)
	}
	f := m.f
	n := int(f.n.Add(1) - 1)
	k := f.Kind(n)
	f.count[k].Add(1)
	if k == FaultNone {
		return m.next.Generate(ctx, req)
	}
	if f.cfg.OnFault != nil {
		f.cfg.OnFault(n, k)
	}
	switch k {
	case Fault429:
		return nil, RateLimitError(max(f.cfg.RetryAfter, 0))
	case Fault500:
		return nil, StatusError(500)
	case Fault502:
		return nil, StatusError(502)
	case Fault503:
		return nil, StatusError(503)
	case FaultConnRefused:
		return nil, ConnRefusedError()
	case FaultContextOverflow:
		return nil, ContextOverflowError()
	case FaultSlowTTFT:
		var s sleeper
		err := s.sleep(ctx, f.cfg.SlowTTFT)
		s.stop()
		if err != nil {
			return nil, portico.FromContext(ctx)
		}
		return m.next.Generate(ctx, req)
	case FaultTimeout:
		return m.timeout(ctx, req)
	case FaultStall:
		return m.stall(ctx, req)
	}
	return m.corrupt(ctx, req, k)
}

func (m *faultModel) timeout(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	r := req.Clone()
	r.OnChunk = nil
	_, _ = m.next.Generate(ctx, r)
	var s sleeper
	err := s.sleep(ctx, m.f.cfg.Timeout)
	s.stop()
	if err != nil {
		return nil, portico.FromContext(ctx)
	}
	return nil, TimeoutError()
}

func (m *faultModel) stall(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	if req.OnChunk != nil {
		s := &stalling{ctx: ctx, left: m.f.cfg.StallAfter}
		_, err := m.next.Generate(ctx, s.Watch(req, s))
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
	}
	<-ctx.Done()
	return nil, portico.FromContext(ctx)
}

// stalling passes StallAfter chunks on, then blocks the next one until ctx
// is done.
type stalling struct {
	portico.StreamWatch
	ctx  context.Context
	left int
}

// GateChunk passes a chunk while any are left, then stalls.
func (s *stalling) GateChunk(portico.Chunk, bool) (bool, error) {
	if s.left == 0 {
		<-s.ctx.Done()
		return false, portico.FromContext(s.ctx)
	}
	s.left--
	return true, nil
}

// corrupt answers with a copy of the inner Model's Response made invalid (k
// is FaultInvalidJSON or FaultTruncation), streaming the corrupted text. An
// inner (nil, nil) is passed through.
func (m *faultModel) corrupt(ctx context.Context, req *portico.Request, k FaultKind) (*portico.Response, error) {
	r := req.Clone()
	r.OnChunk = nil
	resp, err := m.next.Generate(ctx, r)
	if err != nil || resp == nil {
		return resp, err
	}
	c := *resp // the inner Model may share its Response: change a copy
	resp = &c
	if k == FaultInvalidJSON {
		resp.Text = BrokenJSON
	} else {
		i := len(resp.Text) / 2
		for i > 0 && !utf8.RuneStart(resp.Text[i]) {
			i--
		}
		resp.Text = resp.Text[:i]
		resp.FinishReason = portico.FinishLength
	}
	if req.OnChunk != nil {
		ch := chunker{text: resp.Text}
		for {
			text, ok := ch.next()
			if !ok {
				break
			}
			if err := req.OnChunk(portico.Chunk{Text: text}); err != nil {
				return nil, err
			}
		}
	}
	return resp, nil
}
