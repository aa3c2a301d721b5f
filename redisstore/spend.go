package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/spend"
)

// SpendStore keeps a [spend.Budgets]' spent amounts in Redis: set
// spend.Config.Shared.Store to it. Each (Name, Key, window) is one string
// key holding the amount spent, reservations included, that expires a
// minute after its window ends; a key's windows share a hash tag, so one
// script reserves in all of them at once, in one round trip. A SpendStore
// is safe for concurrent use.
type SpendStore struct{ s *Store }

// Spend returns the [spend.Store] of s.
func (s *Store) Spend() *SpendStore { return &SpendStore{s: s} }

var _ spend.Store = (*SpendStore)(nil)

// spendSlack is how long a window's key outlives the window: a call
// admitted just before the end settles into it.
const spendSlack = time.Minute

// remainingScale is the fixed point of Grant.Remaining in the scripts'
// integer replies: a billionth of the price unit.
const remainingScale = 1e9

// spendKeys returns the keys of a's windows, then the tag they share.
func (st *SpendStore) spendKeys(a *spend.Account, extra int) ([]string, string) {
	tagged := strconv.Itoa(len(a.Name)) + ":" + a.Name + a.Key
	base := st.s.key("sp", tagged) + ":"
	keys := make([]string, len(a.Limits), len(a.Limits)+extra)
	for i, l := range a.Limits {
		id, _ := l.Window.Of(a.At)
		keys[i] = base + l.Window.String()[:2] + strconv.FormatInt(id, 10)
	}
	return keys, tagged
}

// Reserve implements [spend.Store] with [reserveScript]: one round trip,
// applied once however often the client resends it.
func (st *SpendStore) Reserve(ctx context.Context, a *spend.Account, cost float64) (spend.Grant, error) {
	keys, tagged := st.spendKeys(a, 1)
	keys = append(keys, st.s.opKey(tagged))
	args := make([]any, 0, 2+2*len(a.Limits))
	args = append(args, cost)
	for _, l := range a.Limits {
		_, end := l.Window.Of(a.At)
		args = append(args, l.Amount, (end.Sub(a.At) + spendSlack).Milliseconds())
	}
	args = append(args, st.s.opTTL)
	res, err := run(ctx, st.s, (*redis.Cmd).Int64Slice, reserveScript, keys, args...)
	if err != nil {
		return spend.Grant{}, err
	}
	if len(res) != 2 {
		return spend.Grant{}, errors.New("redisstore: reserve: malformed reply")
	}
	g := spend.Grant{Admitted: res[0] == 0, Remaining: float64(res[1]) / remainingScale}
	if !g.Admitted {
		g.Over = int(res[0]) - 1
	}
	return g, nil
}

// Settle implements [spend.Store] with [settleSpendScript]: one round
// trip, applied once however often the client resends it.
func (st *SpendStore) Settle(ctx context.Context, a *spend.Account, delta float64) error {
	keys, tagged := st.spendKeys(a, 1)
	keys = append(keys, st.s.opKey(tagged))
	_, err := run(ctx, st.s, (*redis.Cmd).Result, settleSpendScript, keys, delta, st.s.opTTL)
	return err
}

// Spent implements [spend.Store] with one MGET.
func (st *SpendStore) Spent(ctx context.Context, a *spend.Account) ([]float64, error) {
	keys, _ := st.spendKeys(a, 0)
	out := make([]float64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	var vals []any
	err := st.s.do(ctx, func(ctx context.Context) error {
		var err error
		vals, err = st.s.c.MGet(ctx, keys...).Result()
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		if s, ok := v.(string); ok {
			out[i], _ = strconv.ParseFloat(s, 64)
		}
	}
	return out, nil
}

// reserveScript: KEYS the windows' keys, then the operation's record (see
// onceLib); ARGV the cost, then each window's amount and TTL in
// milliseconds, then the record's TTL. It admits when every window has
// spent less than its amount, adding the cost to each (a new key gets its
// TTL), and returns {0, remaining} or {i, remaining} when window i (from
// 1) was spent, remaining the least amount left before the reservation in
// billionths, within ±9e18.
var reserveScript = redis.NewScript(onceLib + `
return once(function()
local rem
for i, k in ipairs(KEYS) do
  local left = tonumber(ARGV[2 * i]) - tonumber(redis.call('GET', k) or '0')
  if rem == nil or left < rem then rem = left end
  if left <= 0 then return {i, math.max(-9e18, math.min(9e18, rem * 1e9))} end
end
for i, k in ipairs(KEYS) do
  redis.call('INCRBYFLOAT', k, ARGV[1])
  redis.call('PEXPIRE', k, ARGV[2 * i + 1], 'NX')
end
return {0, math.max(-9e18, math.min(9e18, (rem or 0) * 1e9))}
end)
`)

// settleSpendScript: KEYS the windows' keys, then the operation's record;
// ARGV the delta, the record's TTL. Adds the delta to each window still
// kept, never below zero.
var settleSpendScript = redis.NewScript(onceLib + `
return once(function()
for _, k in ipairs(KEYS) do
  if redis.call('EXISTS', k) == 1 then
    if tonumber(redis.call('INCRBYFLOAT', k, ARGV[1])) < 0 then redis.call('SET', k, '0', 'KEEPTTL') end
  end
end
return 1
end)
`)
