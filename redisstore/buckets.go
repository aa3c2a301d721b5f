package redisstore

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/internal/admit"
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

// bucketNums appends the limits' numbers shared by the bucket scripts to
// a: the rates in tokens (requests) per second, 0 for no bucket, and the
// bursts.
func bucketNums(a []float64, lim *ratelimit.Limits) []float64 {
	var tr, tb, rr, rb float64
	if lim.Tokens > 0 {
		tr, tb = admit.Rate(lim.Tokens, lim.Period), float64(lim.TokenBurst)
	}
	if lim.Requests > 0 {
		rr, rb = admit.Rate(lim.Requests, lim.Period), float64(lim.RequestBurst)
	}
	return append(a, tr, tb, rr, rb)
}

// bucketArgs returns bucketNums as script arguments, with room for extra
// more (the lease script's).
func bucketArgs(lim *ratelimit.Limits, extra int) []any {
	var n [4]float64
	bucketNums(n[:0], lim)
	return append(make([]any, 0, 4+extra), n[0], n[1], n[2], n[3])
}

// packNums appends nums to buf as one script argument: each number as
// eight bytes, a little-endian float64, which the script reads back with
// one struct.unpack (nums in bucketLib). One binary argument instead of
// one per number: the client writes one value and formats no number, the
// server parses none.
func packNums(buf []byte, nums ...float64) []byte {
	for _, v := range nums {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return buf
}

// Take implements [ratelimit.Store] with [takeScript]: one round trip,
// applied once however often the client resends it.
func (b *Buckets) Take(ctx context.Context, key string, lim *ratelimit.Limits, cost int) (time.Duration, string, error) {
	var nb [5]float64
	var buf [96]byte
	arg := string(packNums(buf[:0], append(bucketNums(nb[:0], lim), float64(cost))...))
	k := []string{b.s.key("rl", key), b.s.opKey(key)}
	res, err := run(ctx, b.s, (*redis.Cmd).Int64Slice, takeScript, k, arg, b.s.opTTL)
	if err != nil {
		return 0, "", err
	}
	if len(res) != 2 {
		return 0, "", errors.New("redisstore: take: malformed reply")
	}
	wait, which := takeResult(res[0], res[1])
	return wait, which, nil
}

// takeResult is a take's reply: the wait in microseconds (0: admitted)
// and the bucket that refused, 1 (tokens) or 2 (requests).
func takeResult(wait, which int64) (time.Duration, string) {
	switch {
	case wait == 0:
		return 0, ""
	case which == 2:
		return time.Duration(wait) * time.Microsecond, "requests"
	}
	return time.Duration(wait) * time.Microsecond, "tokens"
}

// Settle implements [ratelimit.Store] with [settleScript]. It returns at
// once: the settle waits in the Store's queue and is sent after the call
// (see Settles and their delay in the package documentation), applied
// once however often the client resends it. When the queue is full or
// the Store closed it is sent now, and its error returned.
func (b *Buckets) Settle(ctx context.Context, key string, lim *ratelimit.Limits, tokens int, rl *portico.RateLimit, hold time.Duration) error {
	op := pendingSettle{key: key}
	n := bucketNums(op.nums[:0], lim)
	n = append(n, float64(tokens), float64(lim.Tokens), float64(micros(hold)))
	n = appendQuota(n, rl, true)
	appendQuota(n, rl, false)
	return b.s.settle(ctx, &op)
}

var _ ratelimit.Returner = (*Buckets)(nil)

// Return implements [ratelimit.Returner] as a settle that also gives one
// request back (never above the request bucket's burst): queued and sent
// after the call, as [Buckets.Settle].
func (b *Buckets) Return(ctx context.Context, key string, lim *ratelimit.Limits, cost int) error {
	op := pendingSettle{key: key}
	n := bucketNums(op.nums[:0], lim)
	n = append(n, float64(cost), float64(lim.Tokens), 0)
	n = appendQuota(n, nil, true)
	appendQuota(n, nil, false)
	op.nums[15] = 1
	return b.s.settle(ctx, &op)
}

// Admission implements internal/admit's Joiner: a request's takes and
// deposit on one server are asked in one script ([Store.Admit]); on a
// Cluster or a Ring, where they live in several slots, each layer asks
// its own.
func (b *Buckets) Admission() admit.Store { return b.s.admission() }

// appendQuota appends one quota of rl (the tokens' or the requests'):
// known (0 or 1), remaining, limit, reset in microseconds.
func appendQuota(a []float64, rl *portico.RateLimit, tokens bool) []float64 {
	if rl == nil {
		return append(a, 0, 0, 0, 0)
	}
	q := rl.Requests
	if tokens {
		q = rl.Tokens
	}
	if !q.Known {
		return append(a, 0, 0, 0, 0)
	}
	return append(a, 1, float64(q.Remaining), float64(q.Limit), float64(micros(q.Reset)))
}

// micros converts d to whole microseconds, rounding down, saturating at
// 2^53 (a Lua number's exact integers).
func micros(d time.Duration) int64 {
	return min(int64(d/time.Microsecond), 1<<53)
}

// The bucket scripts. A key's hash holds, for the token bucket (prefix t)
// and the request bucket (prefix r): the level in millionths of a token
// (tl, rl), a whole number, at its last update (tt, rt, microseconds of
// the server's clock), and a provider's tighter view: its rate in tokens
// per second (tp, rp) until a time (tu, ru; 0 or absent: none). The
// refill is the in-memory bucket's, min(burst, level + rate*dt), at the
// lower rate while a view holds; a level written is rounded down to the
// millionth. The key expires one to two seconds after both buckets would
// be full and no view holds, so an absent key is a full bucket: a write
// that needs a longer life than the expiry it set (xe, milliseconds of the
// server's clock) sets the need plus a second, so the next second's writes
// send no PEXPIRE. One HMGET reads both buckets; one HSET writes only the
// fields that changed. Numbers are written as integers, which Lua reads
// back exact; nums reads a packed argument (packNums).
const bucketLib = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nowtext = t[1] .. string.format('%06d', tonumber(t[2]))
local function nums(s)
  return {struct.unpack('<' .. string.rep('d', #s / 8), s)}
end
-- int returns v rounded down as an integer's text.
local function int(v)
  v = math.floor(v)
  if v > -9e18 and v < 9e18 then return string.format('%d', v) end
  return string.format('%.0f', v)
end
local function refill(b, v1, v2, v3, v4)
  b.pr0, b.pu0 = tonumber(v3) or 0, tonumber(v4) or 0
  b.pr, b.pu = b.pr0, b.pu0
  if not v1 then
    b.level = b.burst
    return b
  end
  local level, last = math.min(tonumber(v1), b.burst), tonumber(v2)
  if now > last then
    if b.pu > last then
      local pr = math.min(b.pr, b.rate)
      local stop = math.min(now, b.pu)
      level = math.min(b.burst, level + pr * (stop - last))
      last = stop
    end
    level = math.min(b.burst, level + b.rate * (now - last))
  end
  if b.pu <= now then b.pr, b.pu = 0, 0 end
  b.level = level
  return b
end
-- open reads k's buckets, refilled to now: the token bucket (nil when its
-- rate tr is 0) and the request bucket (nil when rr is 0).
local function open(k, tr, tb, rr, rb)
  local v = redis.call('HMGET', k, 'tl', 'tt', 'tp', 'tu', 'rl', 'rt', 'rp', 'ru', 'xe')
  local tok, req
  if tr > 0 then tok = refill({rate = tr, burst = tb * 1000000}, v[1], v[2], v[3], v[4]) end
  if rr > 0 then req = refill({rate = rr, burst = rb * 1000000}, v[5], v[6], v[7], v[8]) end
  return tok, req, tonumber(v[9])
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
-- fields appends to f the fields of b (named l, t, p, u) that changed.
local function fields(f, b, l, t, p, u)
  local n = #f
  f[n + 1], f[n + 2], f[n + 3], f[n + 4] = l, int(b.level), t, nowtext
  if b.pr ~= b.pr0 or b.pu ~= b.pu0 then
    f[n + 5], f[n + 6], f[n + 7], f[n + 8] = p, b.pr, u, int(b.pu)
  end
end
-- save writes k's buckets; xe is the expiry open read (nil: unknown).
local function save(k, tok, req, xe)
  if not tok and not req then return end
  local f, ttl = {'HSET', k}, 0
  if tok then
    fields(f, tok, 'tl', 'tt', 'tp', 'tu')
    ttl = full(tok)
  end
  if req then
    fields(f, req, 'rl', 'rt', 'rp', 'ru')
    ttl = math.max(ttl, full(req))
  end
  local need, nowms = math.ceil(ttl / 1000) + 1000, math.floor(now / 1000)
  if xe and xe >= nowms + need then
    redis.call(unpack(f))
    return
  end
  need = need + 1000
  f[#f + 1], f[#f + 2] = 'xe', int(nowms + need)
  redis.call(unpack(f))
  redis.call('PEXPIRE', k, need)
end
-- The keys a script opened, by name: {tok, req, the limits opened with,
-- dirty}. A key that one script touches twice (the settle of a request
-- and the take of the next) is read once and written once, at commit.
local opened = {}
local function bucket(k, tr, tb, rr, rb)
  local c = opened[k]
  if c and (c.tr ~= tr or c.tb ~= tb or c.rr ~= rr or c.rb ~= rb) then
    if c.dirty then save(k, c.tok, c.req, c.xe) end -- other limits: read it again
    c = nil
  end
  if not c then
    local tok, req, xe = open(k, tr, tb, rr, rb)
    c = {tok = tok, req = req, xe = xe, tr = tr, tb = tb, rr = rr, rb = rb, dirty = false}
    opened[k] = c
  end
  return c
end
-- commit writes every key changed since it was opened.
local function commit()
  for k, c in pairs(opened) do
    if c.dirty then save(k, c.tok, c.req, c.xe) end
  end
end
-- take charges cost tokens and one request to k's buckets, or nothing:
-- both are checked before either is charged. It returns 0, 0 when
-- admitted, else the wait in microseconds and 1 (tokens) or 2
-- (requests), the wait covering both buckets when the token bucket
-- refused. What it charged is written at commit.
local function take(k, tr, tb, rr, rb, cost)
  local c = bucket(k, tr, tb, rr, rb)
  local tok, req = c.tok, c.req
  local eps = 0.001 -- a billionth of a token: float noise of the refill
  if tok then
    local need = cost * 1000000 - tok.level
    if need > eps then
      local w = wait(tok, need)
      if req and req.level < 1000000 - eps then w = math.max(w, wait(req, 1000000 - req.level)) end
      return math.min(math.max(w, 1), 9007199254740992), 1
    end
  end
  if req then
    local need = 1000000 - req.level
    if need > eps then return math.min(math.max(wait(req, need), 1), 9007199254740992), 2 end
    req.level = req.level - 1000000
  end
  if tok then tok.level = tok.level - cost * 1000000 end
  c.dirty = tok ~= nil or req ~= nil
  return 0, 0
end
local function adopt(b, known, remaining, limit, reset, hold)
  if known ~= 1 then return end
  local r = math.max(remaining, 0) * 1000000
  if r < b.level then b.level = r end
  if reset <= 0 or limit <= 0 or remaining >= limit then return end
  local pr = (limit - remaining) / (reset / 1000000)
  if pr >= b.rate then return end
  local untl = now + math.min(reset, hold)
  if b.pu == 0 or pr < b.pr or untl > b.pu then b.pr, b.pu = pr, untl end
end
-- settle applies to k the settle of a[i..i+15]: the four limits as for
-- take, tokens back (> 0) or charged (< 0), the charge's floor in tokens,
-- the longest hold of a provider view in microseconds, for the tokens
-- then the requests: known (1) or not (0), remaining, limit, reset in
-- microseconds, and the requests back (a take returned whole: see
-- Buckets.Return). A refund never lifts a level above its burst; a charge
-- takes it no lower than -floor; a view lowers the level to what remains
-- and, until the reset (hold at most), slows the refill to
-- (limit - remaining) / reset when that is slower, as the in-memory
-- bucket's adopt. What it changed is written at commit.
local function settle(k, a, i)
  local d, floor, hold = a[i + 4], a[i + 5], a[i + 6]
  local c = bucket(k, a[i], a[i + 1], a[i + 2], a[i + 3])
  local tok, req = c.tok, c.req
  if tok then
    if d > 0 then
      tok.level = math.min(tok.burst, tok.level + d * 1000000)
    elseif d < 0 then
      tok.level = math.min(tok.level, math.max(tok.level + d * 1000000, -floor * 1000000))
    end
    adopt(tok, a[i + 7], a[i + 8], a[i + 9], a[i + 10], hold)
  end
  if req then
    if a[i + 15] > 0 then req.level = math.min(req.burst, req.level + a[i + 15] * 1000000) end
    adopt(req, a[i + 11], a[i + 12], a[i + 13], a[i + 14], hold)
  end
  c.dirty = tok ~= nil or req ~= nil
end
`

// takeScript: KEYS[1] the key's hash, then the operation's record (see
// onceLib, as for every script); ARGV[1] packed: token rate, token burst,
// request rate, request burst (rate 0: no such bucket), cost in tokens.
// Returns take's {wait, which}.
var takeScript = redis.NewScript(bucketLib + onceLib + `
return once(function()
local a = nums(ARGV[1])
local w, which = take(KEYS[1], a[1], a[2], a[3], a[4], a[5])
commit()
return {w, which}
end, 't0,0')
`)

// settleScript: KEYS the keys' hashes, then the operation's record;
// ARGV[1] packed: sixteen numbers for each key, settle's. The settles
// apply in order, each as settle says; a batch of a Store's queue is one
// operation, applied once.
var settleScript = redis.NewScript(bucketLib + onceLib + `
return once(function()
local a = nums(ARGV[1])
for j, k in ipairs(KEYS) do settle(k, a, (j - 1) * 16 + 1) end
commit()
return 1
end, '1')
`)
