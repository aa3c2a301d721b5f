package route

import (
	"cmp"
	"container/list"
	"fmt"
	"github.com/portico-llm/portico/internal/rules"
	"sync"
)

// Affinity is the [Strategy] of Autellix (Luo et al., "Autellix: An Efficient
// Serving Engine for LLM Agents as General Programs", 2025): session affinity limited
// to the calls for which locality is worth more than imbalance. A call of at
// most ShortTokens estimated input tokens goes to the least-used replica (it
// finds the shared system prompt cached anywhere); a longer one goes to its
// program's replica, keyed by Request.Identity.SessionID and chosen as the
// least-used replica at the program's first long call. Least used means fewest
// calls in flight, then fewest picks, then lowest index.
//
// A long call without a SessionID is treated as short. When a program's
// replica is unavailable the call goes to the least-used one, which becomes the
// program's replica. The session map is bounded: beyond MaxSessions the least
// recently used session is forgotten (its next long call picks afresh).
type Affinity struct {
	// ShortTokens is the largest estimated input, in tokens, of a call sent to
	// the least-used replica; 0 means 2048 (Autellix's cut). Negative is an
	// error (see [Affinity.Validate]).
	ShortTokens int
	// MaxSessions bounds the session-to-replica map, in entries; 0 means 65536.
	// Negative is an error (see [Affinity.Validate]).
	MaxSessions int
}

// Validate returns nil when s's settings are usable, or an error starting
// "route: Affinity" naming the first bad one: a negative ShortTokens or
// MaxSessions (zero means the default; any positive value is usable).
// [NewBalancer] calls it and returns its error.
func (s Affinity) Validate() error {
	return rules.First(
		rules.If(s.ShortTokens < 0, fmt.Sprintf("route: Affinity negative ShortTokens %d", s.ShortTokens)),
		rules.If(s.MaxSessions < 0, fmt.Sprintf("route: Affinity negative MaxSessions %d", s.MaxSessions)),
	)
}

// NewPicker returns Affinity's picker over replicas. Short calls take no lock
// and do not allocate; long calls take one mutex for the session map and
// allocate when a session is first seen. Through [NewBalancer], bad settings
// are an error it returns (see [Affinity.Validate]); NewPicker called
// directly, outside a Balancer, panics with Validate's error, whose message
// starts "route:".
func (s Affinity) NewPicker(replicas []*Replica) Picker {
	if err := s.Validate(); err != nil {
		panic(err.Error())
	}
	return &affinityPicker{replicas: replicas, short: cmp.Or(s.ShortTokens, 2048), max: cmp.Or(s.MaxSessions, 65536),
		sessions: make(map[string]*list.Element)}
}

type affinityPicker struct {
	replicas []*Replica
	short    int
	max      int

	mu       sync.Mutex
	sessions map[string]*list.Element // of *session
	lru      list.List                // front = most recently used
}

type session struct {
	id      string
	replica int
}

func (p *affinityPicker) Pick(info PickInfo) (PickResult, error) {
	id := info.Request.Identity.SessionID
	if info.InputTokens <= p.short || id == "" {
		return picked(p.replicas, leastUsed(p.replicas))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return picked(p.replicas, p.sessionReplica(id))
}

// sessionReplica returns session id's replica, placed on the least used
// one at its first long call or when its own is unavailable. p.mu is held.
func (p *affinityPicker) sessionReplica(id string) int {
	e, ok := p.sessions[id]
	if !ok {
		i := leastUsed(p.replicas)
		if i >= 0 {
			p.remember(id, i)
		}
		return i
	}
	p.lru.MoveToFront(e)
	s := e.Value.(*session)
	if p.replicas[s.replica].Available() {
		return s.replica
	}
	i := leastUsed(p.replicas)
	if i >= 0 {
		s.replica = i
	}
	return i
}

// remember places session id on replica i, forgetting the least recently
// used session beyond max. p.mu is held.
func (p *affinityPicker) remember(id string, i int) {
	if len(p.sessions) >= p.max {
		old := p.lru.Back()
		p.lru.Remove(old)
		delete(p.sessions, old.Value.(*session).id)
	}
	p.sessions[id] = p.lru.PushFront(&session{id: id, replica: i})
}
