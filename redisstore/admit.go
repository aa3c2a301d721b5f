package redisstore

import (
	"context"
	"errors"

	"github.com/portico-llm/portico/internal/admit"
)

// admission returns s as the Store of a request's admission plan, or nil
// on a Cluster or a Ring: one script touches keys of one slot there, and a
// request's keys (its client's, its route's, its destination's) are in
// several.
func (s *Store) admission() admit.Store {
	if s.multi {
		return nil
	}
	return s
}

// Admit runs a request's admission plan (see internal/admit; package stack
// builds it) in one script, [admitScript]: one round trip for what the
// layers would ask in one each. It carries up to carryMax settles of the
// Store's queue, applied before the takes (see Settles and their delay in
// the package documentation); an admission that carries settles runs
// under [Config.Timeout] alone, not ctx, since a caller's context ending
// must not lose other calls' settles. It is applied once however often the
// client resends it. An error leaves every step not done; each layer then
// asks its own operation, which fails at once during an outage.
func (s *Store) Admit(ctx context.Context, p *admit.Plan) error {
	if !s.admits.Load() {
		s.admits.Store(true)
	}
	var carried [carryMax]pendingSettle
	batch := s.carry(carried[:0])
	var orig []pendingSettle
	if s.settled != nil && len(batch) > 0 {
		orig = append(orig, batch...) // the hook sees each settle, merge folds them
	}
	args := s.admitArgs(p, merge(batch))
	var res [3]int64
	if len(batch) > 0 {
		// The settles are other calls': this caller's context ending
		// must not lose them. The script runs under Timeout alone, which
		// bounds how long a canceled caller still waits.
		ctx = context.WithoutCancel(ctx)
	}
	err := s.do(ctx, func(ctx context.Context) error {
		return ints(s.eval(ctx, admitScript, args), res[:])
	})
	if len(batch) > 0 {
		if err != nil {
			s.lost(len(batch), err)
		}
		s.applied(orig, err)
	}
	if err != nil {
		return err
	}
	return applyAdmit(p, res[:])
}

// admitArgs returns [admitScript]'s command for p and the settles
// carried, as [Store.eval] takes it: KEYS, then ARGV[1] packed, then the
// record's TTL. The operation's record is tagged with the first take's
// key, else the deposit's destination.
func (s *Store) admitArgs(p *admit.Plan, settles []pendingSettle) []any {
	args := make([]any, 3, 3+6+len(settles)+2)
	var buf [192]byte
	a := packNums(buf[:0], float64(p.NBuckets))
	tagged := ""
	for i := range p.NBuckets {
		b := &p.Buckets[i]
		args = append(args, s.bucketKey(b.Key))
		a = packNums(a, b.TokenRate, float64(b.TokenBurst), b.RequestRate, float64(b.RequestBurst), float64(b.Cost))
		if i == 0 {
			tagged = b.Key
		}
	}
	if d := &p.Deposit; p.HasDeposit {
		k := s.key("rb", d.Dest)
		args = append(args, k+":c:"+part(d.Client))
		nd := 1.0
		if d.DestinationCapacity > 0 {
			args = append(args, k+":d")
			nd = 2
		}
		a = packNums(a, nd, float64(d.Deposit), float64(d.Capacity), float64(d.DestinationDeposit),
			float64(d.DestinationCapacity), float64(s.budgetTTL.Milliseconds()))
		if tagged == "" {
			tagged = d.Dest
		}
	} else {
		a = packNums(a, 0, 0, 0, 0, 0, 0)
	}
	a = packNums(a, float64(len(settles)))
	for i := range settles {
		args = append(args, s.bucketKey(settles[i].key))
		a = packNums(a, settles[i].nums[:]...)
	}
	args = append(args, s.opKey(tagged))
	args[2] = len(args) - 3
	return append(args, string(a), s.opTTLArg)
}

// applyAdmit marks in p the steps [admitScript]'s reply res says are done,
// and the refusing take's wait; a reply of another shape is an error.
func applyAdmit(p *admit.Plan, res []int64) error {
	if len(res) != 3 || res[0] < 0 || res[0] > int64(p.NBuckets) {
		return errors.New("redisstore: admit: malformed reply")
	}
	stop := int(res[0]) // 0: every take admitted; else the 1-based take that refused
	for i := range p.NBuckets {
		b := &p.Buckets[i]
		switch {
		case stop == 0 || i+1 < stop:
			b.Done = true
		case i+1 == stop:
			b.Done = true
			b.Wait, b.Which = takeResult(res[1], res[2])
		}
	}
	p.Deposit.Done = p.HasDeposit && stop == 0
	return nil
}

// admitScript: KEYS the takes' hashes, then the client's and (when the
// destination has one) the destination's retry budget, then the settles'
// hashes, then the operation's record; ARGV[1] packed: the number of
// takes, take's five numbers for each, then the number of budget keys
// (0: no deposit), the client's deposit and capacity, the destination's,
// and the budgets' TTL in milliseconds, then the number of settles and
// settle's sixteen numbers for each. The settles apply first (they were
// queued before this request's takes), then the takes in order, and the
// first that refuses stops the script (the earlier stay charged; the
// deposit is not made). Returns {0, 0, 0} when every take admitted, else
// {i, wait, which}: the 1-based take that refused and take's reply.
var admitScript = newScript(bucketLib + budgetLib + onceLib + admitBody)

const admitBody = `
return once(function()
local a = nums(ARGV[1])
local n = a[1]
local j = 2 + n * 5
local nd, m = a[j], a[j + 6]
for i = 1, m do settle(KEYS[n + nd + i], a, j + 7 + (i - 1) * 16) end
for i = 1, n do
  local t = 2 + (i - 1) * 5
  local w, which = take(KEYS[i], a[t], a[t + 1], a[t + 2], a[t + 3], a[t + 4])
  if w ~= 0 then
    commit()
    return {i, w, which}
  end
end
if nd > 0 then
  local ttl = a[j + 5]
  credit(KEYS[n + 1], a[j + 1], a[j + 2], ttl)
  if nd > 1 then credit(KEYS[n + 2], a[j + 3], a[j + 4], ttl) end
end
commit()
return {0, 0, 0}
end, 't0,0,0')
`
