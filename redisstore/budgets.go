package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/internal/admit"
	"github.com/portico-llm/portico/retry"
)

// Budgets keeps a [retry.Retrier]'s retry budgets in Redis: set
// retry.Config.Budget.Shared.Store to it. A (destination, client) bucket
// and its destination's bucket share a hash tag, the destination, so one
// script updates both atomically on one server or one Cluster slot. A
// Budgets is safe for concurrent use.
type Budgets struct{ s *Store }

// Budgets returns the [retry.BudgetStore] of s.
func (s *Store) Budgets() *Budgets { return &Budgets{s: s} }

var _ retry.BudgetStore = (*Budgets)(nil)

// keys returns the keys of (dest, client)'s bucket and, when the budgets
// have one, dest's, then the record of a new operation on them.
func (b *Budgets) keys(dest, client string, lim *retry.BudgetLimits) []string {
	k := b.s.key("rb", dest)
	if lim.DestinationCapacity == 0 {
		return []string{k + ":c:" + part(client), b.s.opKey(dest)}
	}
	return []string{k + ":c:" + part(client), k + ":d", b.s.opKey(dest)}
}

// Deposit implements [retry.BudgetStore] with [depositScript], applied
// once however often the client resends it.
func (b *Budgets) Deposit(ctx context.Context, dest, client string, lim *retry.BudgetLimits) error {
	k := b.keys(dest, client, lim)
	_, err := run(ctx, b.s, (*redis.Cmd).Result, depositScript, k, lim.Deposit, lim.Capacity, lim.DestinationDeposit,
		lim.DestinationCapacity, b.s.budgetTTL.Milliseconds(), b.s.opTTL)
	return err
}

// Admission implements internal/admit's Joiner, as [Buckets.Admission].
func (b *Budgets) Admission() admit.Store { return b.s.admission() }

// Spend implements [retry.BudgetStore] with [spendScript], applied once
// however often the client resends it.
func (b *Budgets) Spend(ctx context.Context, dest, client string, lim *retry.BudgetLimits) (string, error) {
	k := b.keys(dest, client, lim)
	res, err := run(ctx, b.s, (*redis.Cmd).Int64, spendScript, k, lim.Capacity, lim.DestinationCapacity,
		b.s.budgetTTL.Milliseconds(), b.s.opTTL)
	switch {
	case err != nil:
		return "", err
	case res == 1:
		return "destination", nil
	case res == 2:
		return "client", nil
	}
	return "", nil
}

// The budget scripts. A bucket is a string key holding its level in
// billionths of a retry (the in-memory budgets' fixed point, exact in a
// Lua number up to 2^53, about nine million retries); an absent key is a
// full bucket, so a bucket that fills up is deleted. Every write sets the
// key's TTL to BudgetTTL: an idle bucket comes back full.
const budgetLib = `
local unit = 1000000000
local function level(k, cap)
  local v = redis.call('GET', k)
  if not v then return cap end
  return math.min(tonumber(v), cap)
end
local function put(k, v, cap, ttl)
  if v >= cap then redis.call('DEL', k) else redis.call('SET', k, string.format('%.0f', v), 'PX', ttl) end
end
-- credit raises k's level by dep, never beyond cap (dep 0: nothing).
local function credit(k, dep, cap, ttl)
  if dep > 0 then
    local v = level(k, cap)
    if v < cap then put(k, v + dep, cap, ttl) end
  end
end
`

// depositScript: KEYS the client's bucket and, optionally, the
// destination's, then the operation's record (see onceLib); ARGV the
// client's deposit and capacity, the destination's deposit and capacity,
// the TTL in milliseconds, the record's. Each level rises by its deposit,
// never beyond its capacity.
var depositScript = redis.NewScript(budgetLib + onceLib + `
return once(function()
local ttl = tonumber(ARGV[5])
for i, k in ipairs(KEYS) do credit(k, tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i]), ttl) end
return 1
end)
`)

// spendScript: KEYS the client's bucket and, optionally, the
// destination's, then the operation's record; ARGV the client's
// capacity, the destination's, the TTL in milliseconds, the record's. Takes one retry from each bucket, or none: returns 0
// when taken, 1 when the destination had less than one, 2 when the client
// had (the destination checked first).
var spendScript = redis.NewScript(budgetLib + onceLib + `
return once(function()
local ttl = tonumber(ARGV[3])
local c = level(KEYS[1], tonumber(ARGV[1]))
local d
if KEYS[2] then
  d = level(KEYS[2], tonumber(ARGV[2]))
  if d < unit then return 1 end
end
if c < unit then return 2 end
put(KEYS[1], c - unit, tonumber(ARGV[1]), ttl)
if d then put(KEYS[2], d - unit, tonumber(ARGV[2]), ttl) end
return 0
end)
`)
