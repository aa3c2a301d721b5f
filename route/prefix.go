package route

import (
	"cmp"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/portico-llm/portico/internal/mono"
	"github.com/portico-llm/portico/internal/rules"
)

// PrefixAware is the [Strategy] of Preble's E2 rule (Srivatsa et al.,
// "Preble: Efficient Distributed Prompt Scheduling for LLM Serving", ICLR
// 2025): exploit a replica's prefix cache when it holds more than half the
// prompt, explore the replica of least cost (recent load + evictions + own
// prefill) otherwise, and rebalance when the chosen replica's calls in
// flight exceed RebalanceFactor times the least loaded's. The package
// documentation, "Prefix-aware placement", gives the rule in full and what
// is not taken from Preble.
//
// It keeps, per replica, a client-side index of the prompt blocks sent there
// within Window, bounded by MaxBlocks blocks per replica. The zero value
// uses the defaults each field gives; [PrefixAware.Validate] rejects bad
// settings. Its picker hashes the prompt once per pick, takes one mutex, never
// blocks and does not allocate.
type PrefixAware struct {
	// BlockBytes is the block size, in bytes of prompt text; 0 means 256
	// (about 64 tokens). Smaller blocks match prefixes more finely and cost more
	// index entries and lookups.
	BlockBytes int
	// BytesPerToken converts bytes to tokens; 0 means 4 (as
	// portico.CharEstimator).
	BytesPerToken float64
	// Window is H, how long a sent prefix counts as cached and a call as recent
	// load; 0 means 3 minutes (Preble's default).
	Window time.Duration
	// MaxBlocks bounds each replica's index, in blocks; 0 means 16384 (about a
	// million tokens of distinct prefix at the default block size).
	MaxBlocks int
	// RebalanceFactor is the load ratio beyond which exploit traffic moves to
	// the least loaded replica; 0 means 2. It must be >= 1.
	RebalanceFactor float64
	// DecodeWeight is the cost of one output token relative to one prefilled
	// input token in the load estimate; 0 means 1.
	DecodeWeight float64
}

// Validate returns nil when s's settings are usable, or an error starting
// "route: PrefixAware" naming the first bad one: a setting that is negative,
// NaN or infinite, a RebalanceFactor in (0, 1), or a BlockBytes or MaxBlocks
// of 2^31 or more. [NewBalancer] calls it and returns its error.
func (s PrefixAware) Validate() error {
	finite := func(x float64) bool { return x >= 0 && !math.IsInf(x, 1) } // false for NaN
	return rules.First(
		rules.If(s.BlockBytes < 0 || s.BlockBytes > math.MaxInt32, fmt.Sprintf("route: PrefixAware BlockBytes %d outside [0, 2^31)", s.BlockBytes)),
		rules.If(s.MaxBlocks < 0 || s.MaxBlocks > math.MaxInt32, fmt.Sprintf("route: PrefixAware MaxBlocks %d outside [0, 2^31)", s.MaxBlocks)),
		rules.If(s.Window < 0, fmt.Sprintf("route: PrefixAware negative Window %v", s.Window)),
		rules.If(!finite(s.BytesPerToken), fmt.Sprintf("route: PrefixAware BytesPerToken %v must be finite and >= 0", s.BytesPerToken)),
		rules.If(!finite(s.DecodeWeight), fmt.Sprintf("route: PrefixAware DecodeWeight %v must be finite and >= 0", s.DecodeWeight)),
		rules.If(!finite(s.RebalanceFactor) || (s.RebalanceFactor > 0 && s.RebalanceFactor < 1),
			fmt.Sprintf("route: PrefixAware RebalanceFactor %v must be 0 (the default) or finite and >= 1", s.RebalanceFactor)),
	)
}

// NewPicker returns the E2 picker over replicas. Each pick hashes the prompt
// once (outside the lock), then takes one mutex for the lookups and the index
// update; it never blocks on anything else. Through [NewBalancer], bad
// settings are an error it returns (see [PrefixAware.Validate]); NewPicker
// called directly, outside a Balancer, panics with Validate's error, whose
// message starts "route:".
func (s PrefixAware) NewPicker(replicas []*Replica) Picker {
	if err := s.Validate(); err != nil {
		panic(err.Error())
	}
	p := &prefixPicker{replicas: replicas, cfg: s}
	c := &p.cfg
	c.BlockBytes = cmp.Or(c.BlockBytes, 256)
	c.BytesPerToken = cmp.Or(c.BytesPerToken, 4)
	c.Window = cmp.Or(c.Window, 3*time.Minute)
	c.MaxBlocks = cmp.Or(c.MaxBlocks, 16384)
	c.RebalanceFactor = cmp.Or(c.RebalanceFactor, 2)
	c.DecodeWeight = cmp.Or(c.DecodeWeight, 1)
	p.width = max(int64(c.Window)/loadSlots, 1)
	p.state = make([]replicaState, len(replicas))
	for i := range p.state {
		p.state[i].index = newBlockIndex(c.MaxBlocks, int64(c.Window))
	}
	p.pool.New = func() any { b := make([]block, 0, 128); return &b }
	return p
}

// maxPooledBlocks bounds the block buffers kept for reuse: 4096 blocks is a
// 1 MB prompt at the default block size.
const maxPooledBlocks = 4096

type prefixPicker struct {
	replicas []*Replica
	cfg      PrefixAware
	width    int64 // load bucket width, nanoseconds
	pool     sync.Pool

	mu    sync.Mutex
	state []replicaState
}

type replicaState struct {
	index   blockIndex
	load    loadRing
	outAvg  float64 // EWMA of output tokens, from feedback
	outSeen bool
	// per-pick scratch, under mu
	hit      int     // leading blocks cached
	q        float64 // recent load, tokens
	nReq     int     // calls in the window
	inFlight int
}

// less orders replicas by load: calls in flight, then recent load Q.
func (st *replicaState) less(o *replicaState) bool {
	return st.inFlight < o.inFlight || (st.inFlight == o.inFlight && st.q < o.q)
}

func (p *prefixPicker) Pick(info PickInfo) (PickResult, error) {
	t := mono.Now()
	if !info.Now.IsZero() {
		t = mono.Of(info.Now)
	}
	bp := p.pool.Get().(*[]block)
	bs := hashPrompt(info.Request, p.cfg.BlockBytes, (*bp)[:0])
	i := p.place(bs, int64(t))
	if cap(bs) <= maxPooledBlocks { // a huge prompt's buffer is left to the GC
		*bp = bs[:0]
		p.pool.Put(bp)
	}
	return picked(p.replicas, i)
}

// place runs E2 for the prompt blocks bs at time t (a mono.Now reading, in
// ns) and records the blocks on the chosen replica; -1 when no replica is
// available.
func (p *prefixPicker) place(bs []block, t int64) int {
	total := prefixBytes(bs, len(bs))
	p.mu.Lock()
	defer p.mu.Unlock()
	best, least := p.survey(bs, t)
	if best < 0 {
		return -1
	}
	chosen := best
	if hb := p.hitBytes(bs, best); hb > total-hb {
		// Exploit, unless the replica is overloaded against the least loaded.
		if float64(p.state[best].inFlight+1) > p.cfg.RebalanceFactor*float64(p.state[least].inFlight+1) {
			chosen = least
		}
	} else if g := p.explore(bs, total, t); g >= 0 {
		chosen = g
	}
	st := &p.state[chosen]
	st.load.add(t, p.width, float64(total-p.hitBytes(bs, chosen))/p.cfg.BytesPerToken)
	st.record(bs, t, floorDiv(t, int64(p.cfg.Window)), p.cfg.MaxBlocks)
	return chosen
}

// survey fills each available replica's per-pick scratch for the prompt
// blocks bs at t (hit is -1 for one unavailable), and returns the replica
// with the longest cached prefix, the least loaded first among equals, and
// the least loaded; -1 for both when none is available. p.mu is held.
func (p *prefixPicker) survey(bs []block, t int64) (best, least int) {
	cutoff := t - int64(p.cfg.Window)
	best, least = -1, -1
	for g, r := range p.replicas {
		st := &p.state[g]
		st.hit = -1
		if !r.Available() {
			continue
		}
		st.index.expire(cutoff)
		st.hit = st.index.longest(bs, cutoff)
		work, n := st.load.sum(t, p.width)
		st.q = work + p.cfg.DecodeWeight*st.outAvg*float64(n)
		st.nReq = n
		st.inFlight = r.InFlight()
		if best < 0 || st.longer(&p.state[best]) {
			best = g
		}
		if least < 0 || st.less(&p.state[least]) {
			least = g
		}
	}
	return best, least
}

// longer reports whether st caches a longer prefix than o, or as long and
// is less loaded.
func (st *replicaState) longer(o *replicaState) bool {
	return st.hit > o.hit || st.hit == o.hit && st.less(o)
}

// explore returns the available replica of least cost C_g = Q_g + E_g +
// R_g for the prompt blocks bs, total bytes long, at t, or -1 when none
// costs less than infinity. p.mu is held.
func (p *prefixPicker) explore(bs []block, total int, t int64) int {
	bpt := p.cfg.BytesPerToken
	chosen, bestC := -1, math.Inf(1)
	for g := range p.replicas {
		st := &p.state[g]
		if st.hit < 0 {
			continue
		}
		c := st.q + float64(total-p.hitBytes(bs, g))/bpt
		if over := st.index.len() + (len(bs) - st.hit) - p.cfg.MaxBlocks; over > 0 && st.nReq > 0 {
			c += st.index.evictionCost(over, bs[:st.hit], t) / bpt / float64(st.nReq)
		}
		if c < bestC {
			chosen, bestC = g, c
		}
	}
	return chosen
}

// hitBytes is the length in bytes of the prefix of bs replica g caches.
func (p *prefixPicker) hitBytes(bs []block, g int) int { return prefixBytes(bs, p.state[g].hit) }

// prefixBytes is the length in bytes of the first k blocks of bs, 0 for
// k <= 0.
func prefixBytes(bs []block, k int) int {
	if k <= 0 {
		return 0
	}
	return bs[k-1].end
}

// record enters the prompt blocks bs, sent at t, in the replica's index,
// last block first, leaving block 0 most recent so that along a chain an
// earlier block is never evicted before a later one (see longest). The
// cached prefix (the first st.hit) is refreshed first and moved back to
// the front last, so that the new blocks evict other prompts', not its own.
func (st *replicaState) record(bs []block, t, epoch int64, maxBlocks int) {
	size := func(k int) int { return prefixBytes(bs, k+1) - prefixBytes(bs, k) }
	hit := max(st.hit, 0)
	if len(bs) > maxBlocks || st.index.len()+len(bs)-hit <= maxBlocks {
		hit = 0 // nothing to protect, or nothing will be evicted: one pass
	}
	for k := hit - 1; k >= 0; k-- {
		st.index.touch(bs[k].hash, size(k), t, epoch)
	}
	for k := len(bs) - 1; k >= hit; k-- {
		st.index.touch(bs[k].hash, size(k), t, epoch)
	}
	for k := hit - 1; k >= 0; k-- {
		st.index.toFront(bs[k].hash)
	}
}

// done folds a finished call's output tokens into replica i's mean output.
func (p *prefixPicker) done(i int, d DoneInfo) {
	if d.Err != nil {
		return
	}
	p.mu.Lock()
	st := &p.state[i]
	if st.outSeen {
		st.outAvg = 0.8*st.outAvg + 0.2*float64(d.Usage.OutputTokens)
	} else {
		st.outAvg, st.outSeen = float64(d.Usage.OutputTokens), true
	}
	p.mu.Unlock()
}

func (*prefixPicker) tokenBlind() {}
