package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/ratelimit"
)

// Buckets keeps a [ratelimit.Limiter]'s request and token buckets in Redis:
// set ratelimit.Config.Shared.Store to it. Each key is one hash, updated
// only by the scripts below, which read the time from the server. A
// Buckets is safe for concurrent use.
type Buckets struct{ s *Store }

// Buckets returns the [ratelimit.Store] of s.
func (s *Store) Buckets() *Buckets { return &Buckets{s: s} }

var _ ratelimit.Store = (*Buckets)(nil)

// bucketArgs returns the limits' arguments shared by both scripts: the
// rates in tokens (requests) per second, 0 for no bucket, and the bursts.
func bucketArgs(lim *ratelimit.Limits, extra int) []any {
	a := make([]any, 4, 4+extra)
	per := lim.Period.Seconds()
	if lim.Tokens > 0 {
		a[0], a[1] = float64(lim.Tokens)/per, lim.TokenBurst
	} else {
		a[0], a[1] = 0, 0
	}
	if lim.Requests > 0 {
		a[2], a[3] = float64(lim.Requests)/per, lim.RequestBurst
	} else {
		a[2], a[3] = 0, 0
	}
	return a
}

// Take implements [ratelimit.Store] with [takeScript]: one round trip,
// applied once however often the client resends it.
func (b *Buckets) Take(ctx context.Context, key string, lim *ratelimit.Limits, cost int) (time.Duration, string, error) {
	k := []string{b.s.key("rl", key), b.s.opKey(key)}
	args := append(bucketArgs(lim, 2), cost, b.s.opTTL)
	var res []int64
	err := b.s.do(ctx, func(ctx context.Context) error {
		var err error
		res, err = takeScript.Run(ctx, b.s.c, k, args...).Int64Slice()
		return err
	})
	if err != nil {
		return 0, "", err
	}
	if len(res) != 2 {
		return 0, "", errors.New("redisstore: take: malformed reply")
	}
	if res[0] == 0 {
		return 0, "", nil
	}
	which := "tokens"
	if res[1] == 2 {
		which = "requests"
	}
	return time.Duration(res[0]) * time.Microsecond, which, nil
}

// Settle implements [ratelimit.Store] with [settleScript]: one round trip,
// applied once however often the client resends it.
func (b *Buckets) Settle(ctx context.Context, key string, lim *ratelimit.Limits, tokens int, rl *portico.RateLimit, hold time.Duration) error {
	k := []string{b.s.key("rl", key), b.s.opKey(key)}
	args := append(bucketArgs(lim, 12), tokens, lim.Tokens, micros(hold))
	args = appendQuota(args, rl, true)
	args = appendQuota(args, rl, false)
	args = append(args, b.s.opTTL)
	return b.s.do(ctx, func(ctx context.Context) error {
		return settleScript.Run(ctx, b.s.c, k, args...).Err()
	})
}

// appendQuota appends one quota of rl (the tokens' or the requests'):
// known (0 or 1), remaining, limit, reset in microseconds.
func appendQuota(args []any, rl *portico.RateLimit, tokens bool) []any {
	if rl == nil {
		return append(args, 0, 0, 0, 0)
	}
	q := rl.Requests
	if tokens {
		q = rl.Tokens
	}
	if !q.Known {
		return append(args, 0, 0, 0, 0)
	}
	return append(args, 1, q.Remaining, q.Limit, micros(q.Reset))
}

// micros converts d to whole microseconds, rounding down, saturating at
// 2^53 (a Lua number's exact integers).
func micros(d time.Duration) int64 {
	return min(int64(d/time.Microsecond), 1<<53)
}

// The bucket scripts. A key's hash holds, for the token bucket (prefix t)
// and the request bucket (prefix r): the level in millionths of a token
// (tl, rl) at the time of its last update (tt, rt, microseconds of the
// server's clock), and a provider's tighter view, its rate in tokens per
// second (tp, rp) until a time (tu, ru; 0: none). The refill is the
// in-memory bucket's: min(burst, level + rate*dt), at the lower of the
// configured and the provider's rate while the view holds. The key
// expires when both buckets would be full and no view holds, so an absent
// key is a full bucket and an expired one changes no decision.
const bucketLib = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function load(p, rate, burst)
  local b = {p = p, rate = rate, burst = burst * 1000000}
  local v = redis.call('HMGET', KEYS[1], p .. 'l', p .. 't', p .. 'p', p .. 'u')
  if not v[1] then
    b.level, b.pr, b.pu = b.burst, 0, 0
    return b
  end
  local level, last = math.min(tonumber(v[1]), b.burst), tonumber(v[2])
  b.pr, b.pu = tonumber(v[3]) or 0, tonumber(v[4]) or 0
  if now > last then
    if b.pu > last then
      local pr = math.min(b.pr, rate)
      local stop = math.min(now, b.pu)
      level = math.min(b.burst, level + pr * (stop - last))
      last = stop
    end
    level = math.min(b.burst, level + rate * (now - last))
  end
  if b.pu <= now then b.pr, b.pu = 0, 0 end
  b.level = level
  return b
end
-- wait returns the microseconds after which b holds need more, rounded up.
local function wait(b, need)
  if b.pu > now and b.pr < b.rate then
    local gained = b.pr * (b.pu - now)
    if gained >= need then return math.ceil(need / b.pr) end
    return math.ceil((b.pu - now) + (need - gained) / b.rate)
  end
  return math.ceil(need / b.rate)
end
-- full returns the microseconds until b is full and its view ended.
local function full(b)
  local d = (b.burst - b.level) / b.rate
  if b.pu > now then d = d + (b.pu - now) end
  return d
end
local function save(bs)
  local ttl = 0
  for _, b in ipairs(bs) do
    redis.call('HSET', KEYS[1], b.p .. 'l', string.format('%.17g', b.level), b.p .. 't', string.format('%.0f', now),
      b.p .. 'p', string.format('%.17g', b.pr), b.p .. 'u', string.format('%.0f', b.pu))
    ttl = math.max(ttl, full(b))
  end
  redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000) + 1000)
end
`

// takeScript: KEYS[1] the key's hash, then the operation's record (see
// onceLib, as for every script); ARGV token rate, token burst,
// request rate, request burst (rate 0: no such bucket), cost in tokens.
// Both buckets are checked before either is charged. Returns {0, 0} when
// admitted, else {wait in microseconds, 1 for tokens or 2 for requests},
// the wait covering both buckets when the token bucket refused.
var takeScript = redis.NewScript(bucketLib + onceLib + `
return once(function()
local tr, tb, rr, rb, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local bs = {}
local tok, req
if tr > 0 then tok = load('t', tr, tb); table.insert(bs, tok) end
if rr > 0 then req = load('r', rr, rb); table.insert(bs, req) end
local eps = 0.001 -- a billionth of a token: float noise of the refill
if tok then
  local need = cost * 1000000 - tok.level
  if need > eps then
    local w = wait(tok, need)
    if req and req.level < 1000000 - eps then w = math.max(w, wait(req, 1000000 - req.level)) end
    return {math.min(math.max(w, 1), 9007199254740992), 1}
  end
end
if req then
  local need = 1000000 - req.level
  if need > eps then return {math.min(math.max(wait(req, need), 1), 9007199254740992), 2} end
  req.level = req.level - 1000000
end
if tok then tok.level = tok.level - cost * 1000000 end
save(bs)
return {0, 0}
end)
`)

// settleScript: KEYS[1] the key's hash; ARGV the four limits as for
// takeScript, then tokens back (> 0) or charged (< 0), the charge's floor
// in tokens, the longest hold of a provider view in microseconds, and for
// the tokens then the requests: known (1) or not (0), remaining, limit,
// reset in microseconds (then the record's TTL, as for every script). A
// refund never lifts a level above its burst; a
// charge takes it no lower than -floor; a view lowers the level to what
// remains and, until the reset (hold at most), slows the refill to
// (limit - remaining) / reset when that is slower, as the in-memory
// bucket's adopt.
var settleScript = redis.NewScript(bucketLib + onceLib + `
return once(function()
local tr, tb, rr, rb = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local d, floor, hold = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local function adopt(b, known, remaining, limit, reset)
  if known ~= 1 then return end
  local r = math.max(remaining, 0) * 1000000
  if r < b.level then b.level = r end
  if reset <= 0 or limit <= 0 or remaining >= limit then return end
  local pr = (limit - remaining) / (reset / 1000000)
  if pr >= b.rate then return end
  local untl = now + math.min(reset, hold)
  if b.pu == 0 or pr < b.pr or untl > b.pu then b.pr, b.pu = pr, untl end
end
local bs = {}
if tr > 0 then
  local tok = load('t', tr, tb)
  if d > 0 then
    tok.level = math.min(tok.burst, tok.level + d * 1000000)
  elseif d < 0 then
    tok.level = math.min(tok.level, math.max(tok.level + d * 1000000, -floor * 1000000))
  end
  adopt(tok, tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]))
  table.insert(bs, tok)
end
if rr > 0 then
  local req = load('r', rr, rb)
  adopt(req, tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]))
  table.insert(bs, req)
end
save(bs)
return 1
end)
`)
