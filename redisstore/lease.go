package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico/ratelimit"
)

var _ ratelimit.LeaseStore = (*Buckets)(nil)

// Lease implements [ratelimit.LeaseStore] with [leaseScript]: one round
// trip, on the key's hash that Take and Settle use (a fleet may mix
// strict and leased instances), applied once however often the client
// resends it.
func (b *Buckets) Lease(ctx context.Context, key string, lim *ratelimit.Limits, back, need, want ratelimit.Grant) (ratelimit.Grant, time.Duration, string, error) {
	k := []string{b.s.key("rl", key), b.s.opKey(key)}
	args := append(bucketArgs(lim, 8), back.Requests, back.Tokens, need.Requests, need.Tokens, want.Requests, want.Tokens,
		lim.Tokens, b.s.opTTL)
	res, err := run(ctx, b.s, (*redis.Cmd).Int64Slice, leaseScript, k, args...)
	if err != nil {
		return ratelimit.Grant{}, 0, "", err
	}
	if len(res) != 4 {
		return ratelimit.Grant{}, 0, "", errors.New("redisstore: lease: malformed reply")
	}
	if res[0] != 0 {
		which := "tokens"
		if res[1] == 2 {
			which = "requests"
		}
		return ratelimit.Grant{}, time.Duration(res[0]) * time.Microsecond, which, nil
	}
	return ratelimit.Grant{Requests: int(res[2]), Tokens: int(res[3])}, 0, "", nil
}

// leaseScript: KEYS as takeScript's; ARGV the four limits as for
// takeScript, then requests and tokens back (tokens < 0: charged, down to
// -floor), requests and tokens needed, requests and tokens wanted, the
// charge's floor in tokens (then the record's TTL). It gives back first,
// as settleScript does (never above a burst), then checks the need as
// takeScript checks a call's cost, both buckets before either is
// charged, and takes of each bucket what it holds between need and want.
// Returns {0, 0, requests, tokens} taken, else {wait in microseconds
// until both buckets hold want, 1 for tokens or 2 for requests (the
// bucket short of need), 0, 0}.
var leaseScript = redis.NewScript(bucketLib + onceLib + `
return once(function()
local tr, tb, rr, rb = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local br, bt, nr, nt = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local wr, wt, floor = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local tok, req = open(KEYS[1], tr, tb, rr, rb)
local gave = false
if tok and bt > 0 then
  tok.level = math.min(tok.burst, tok.level + bt * 1000000); gave = true
elseif tok and bt < 0 then
  tok.level = math.min(tok.level, math.max(tok.level + bt * 1000000, -floor * 1000000)); gave = true
end
if req and br > 0 then req.level = math.min(req.burst, req.level + br * 1000000); gave = true end
local eps = 0.001 -- a billionth of a token: float noise of the refill
-- refuse returns the wait until both buckets hold what is wanted.
local function refuse(which)
  if gave then save(KEYS[1], tok, req) end
  local w = 1
  if tok and wt * 1000000 - tok.level > eps then w = math.max(w, wait(tok, wt * 1000000 - tok.level)) end
  if req and wr * 1000000 - req.level > eps then w = math.max(w, wait(req, wr * 1000000 - req.level)) end
  return {math.min(math.ceil(w), 9007199254740992), which, 0, 0}
end
if tok and nt * 1000000 - tok.level > eps then return refuse(1) end
if req and nr * 1000000 - req.level > eps then return refuse(2) end
local gr, gt = 0, 0
if req then
  gr = math.max(nr, math.min(wr, math.floor((req.level + eps) / 1000000)))
  req.level = req.level - gr * 1000000
end
if tok then
  gt = math.max(nt, math.min(wt, math.floor((tok.level + eps) / 1000000)))
  tok.level = tok.level - gt * 1000000
end
save(KEYS[1], tok, req)
return {0, 0, gr, gt}
end)
`)
