package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/effect"
)

// Effects keeps [effect.Runner]'s execution records in Redis, so that a
// side effect runs at most once across every process sharing the server:
// set effect.Config.Store to it. A record is a hash that expires at the
// record's Expires (PEXPIREAT, rounded down to the millisecond, by the
// server's clock), so an expired record is absent and nothing outlives
// its TTL.
//
// A claim resent with its claim token (go-redis's retries after a lost
// reply, or the Runner's next Do) is recognised as the caller's own. Every
// operation also checks the store's epoch (see Effect records and store
// loss in the package documentation), so that after the server lost
// records, keys it holds no record of are not taken for keys that never
// ran until every run under way, and every outcome a Runner keeps, has
// been written back. An Effects remembers the epochs it has seen and
// counts the losses it saw ([Effects.Losses]): use one per process (or
// per Store). An Effects is safe for concurrent use.
type Effects struct {
	s    *Store
	mode epochMode

	mu     sync.Mutex
	known  map[string]epochSeen // epoch key -> the epoch last seen there
	losses uint64
	// members: epoch key -> the members and their deadlines (id, unix ms,
	// ...) at the last Losses there; publish: the epoch keys where a loss
	// was seen since, whose next Losses publishes them to the new epoch.
	members map[string][]any
	viewed  map[string]time.Time // epoch key -> when members was read
	publish map[string]bool
}

// epochSeen is an epoch as a script last replied it: its id, and when a
// loss was last detected ("0" for never), as the server wrote it.
type epochSeen struct{ id, lost string }

// epochMode is where an Effects keeps the store's epoch.
type epochMode uint8

const (
	epochGlobal epochMode = iota // one key: one server (or one failover group)
	epochSlot                    // one key per hash slot: a Redis Cluster
	epochNone                    // a Ring or an unknown client: no epoch
)

// Effects returns the [effect.Store] of s.
func (s *Store) Effects() *Effects {
	mode := epochNone
	switch s.c.(type) {
	case *redis.Client:
		mode = epochGlobal
	case *redis.ClusterClient:
		mode = epochSlot
	}
	return &Effects{s: s, mode: mode, known: map[string]epochSeen{}, members: map[string][]any{}, viewed: map[string]time.Time{}, publish: map[string]bool{}}
}

var _ effect.LossWatcher = (*Effects)(nil)

// putScript spells effect.Pending as '1': this fails to compile if
// Pending is another number.
var _ = [1]struct{}{}[effect.Pending-1]

// record is a Record as stored in the hash's field d.
type record struct {
	State   effect.State  `json:"s"`
	Result  []byte        `json:"r,omitempty"`
	Args    string        `json:"a,omitempty"`
	Class   portico.Class `json:"c,omitempty"`
	Reason  string        `json:"why,omitempty"`
	Owner   string        `json:"o"`
	Lease   int64         `json:"l,omitempty"` // unix ns
	Expires int64         `json:"e"`           // unix ns
}

func encode(r effect.Record) (string, error) {
	b, err := json.Marshal(record{State: r.State, Result: r.Result, Args: r.Args, Class: r.Class, Reason: r.Reason, Owner: r.Owner,
		Lease: unixNano(r.Lease), Expires: unixNano(r.Expires)})
	return string(b), err
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func decode(s string) (effect.Record, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return effect.Record{}, errors.New("redisstore: malformed effect record: " + err.Error())
	}
	rec := effect.Record{State: r.State, Result: r.Result, Args: r.Args, Class: r.Class, Reason: r.Reason, Owner: r.Owner, Expires: time.Unix(0, r.Expires)}
	if r.Lease != 0 {
		rec.Lease = time.Unix(0, r.Lease)
	}
	return rec, nil
}

// expiresAt returns t as whole unix milliseconds, rounded down, so that a
// record released with Expires now is gone at once; the zero time is long
// past (1, as every time before 1970).
func expiresAt(t time.Time) int64 { return max(t.UnixMilli(), 1) }

// epochKey returns the key of the epoch that covers the record at rkey,
// and the epoch id this Effects last saw there ("" for none), or "" and ""
// when it keeps none.
func (e *Effects) epochKey(rkey string) (key, known string) {
	switch e.mode {
	case epochGlobal:
		key = e.s.prefix + "fx:epoch"
	case epochSlot:
		key = e.s.prefix + "fx:epoch:{" + tagOfSlot(slotOf(rkey)) + "}"
	default:
		return "", ""
	}
	e.mu.Lock()
	known = e.known[key].id
	e.mu.Unlock()
	return key, known
}

// saw records reply, a script's "id:lost", as the epoch at key, and
// counts a loss when it is not the one seen there last.
func (e *Effects) saw(key, reply string) {
	id, lost, _ := strings.Cut(reply, ":")
	if key == "" || id == "" {
		return
	}
	now := epochSeen{id: id, lost: lost}
	e.mu.Lock()
	if was, ok := e.known[key]; ok && was != now {
		e.losses++
		e.publish[key] = true
	}
	e.known[key] = now
	e.mu.Unlock()
}

// Losses implements [effect.LossWatcher]: it checks the epoch of every
// slot this Effects has touched (one on a server, none on a Ring), as
// every effect script does, renews m's membership there, and returns how
// many losses of records this Effects has seen: a change of epoch id or of
// its time of loss. One round trip per slot; see Effect records and store
// loss in the package documentation for the members' hold.
func (e *Effects) Losses(ctx context.Context, m effect.Member) (uint64, error) {
	var keys []string
	switch e.mode {
	case epochGlobal:
		keys = []string{e.s.prefix + "fx:epoch"}
	case epochSlot:
		e.mu.Lock()
		for k := range e.known {
			keys = append(keys, k)
		}
		e.mu.Unlock()
	}
	for _, k := range keys {
		if err := e.member(ctx, k, m); err != nil {
			return 0, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.losses, nil
}

// member runs [memberScript] on the epoch at key for m, with the members
// this Effects saw there last (published to a new epoch after a loss), and
// keeps the members it replies.
func (e *Effects) member(ctx context.Context, key string, m effect.Member) error {
	e.mu.Lock()
	known := e.known[key]
	done, publish := "0", "0"
	if m.Written >= e.losses {
		done = "1"
	}
	if e.publish[key] {
		publish = "1"
	}
	seen := ""
	if known.id != "" {
		seen = known.id + ":" + known.lost
	}
	args := append([]any{m.ID, seen, done, m.Hold.Milliseconds(), publish}, e.members[key]...)
	e.mu.Unlock()
	rest, err := e.run(ctx, memberScript, key, 0, 0, args...)
	if err != nil {
		return err
	}
	e.mu.Lock()
	delete(e.publish, key)
	e.mu.Unlock()
	e.view(key, rest)
	return nil
}

// view keeps members, the members at key as a script replied them.
func (e *Effects) view(key string, members []any) {
	e.mu.Lock()
	e.members[key], e.viewed[key] = members, time.Now()
	e.mu.Unlock()
}

// stale reports whether the members at key were read over a Poll ago.
func (e *Effects) stale(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return time.Since(e.viewed[key]) > effect.DefaultPoll
}

// run runs script on the record at rkey and the epoch that covers it: its
// arguments start with the epoch's (the id this Effects knows, a new id in
// case the script creates the epoch, the quarantine in milliseconds) and
// go on with args. The script replies {epoch ("id:lost"), its
// result...}; run remembers the epoch (saw) and returns the rest.
func (e *Effects) run(ctx context.Context, script *redis.Script, rkey string, quarantine, beat time.Duration, args ...any) ([]any, error) {
	ekey, known := e.epochKey(rkey)
	mode := "1"
	if ekey == "" {
		ekey, mode = rkey, "0" // a Ring: the script keeps no epoch
	}
	ask := "0" // the members, read at most once a Poll on any script
	if mode == "1" && script != memberScript && e.stale(ekey) {
		ask = "1"
	}
	q := strconv.FormatInt(quarantine.Milliseconds(), 10) + "/" + strconv.FormatInt(beat.Milliseconds(), 10) + "/" + ask
	argv := append([]any{mode, known, rand.Text(), q}, args...)
	reply, err := run(ctx, e.s, (*redis.Cmd).Slice, script, []string{rkey, ekey}, argv...)
	if err != nil {
		return nil, err
	}
	if len(reply) == 0 {
		return nil, errors.New("redisstore: malformed effect script reply")
	}
	if members, ok := reply[0].([]any); ok && len(members) > 0 && mode == "1" {
		reply[0] = members[0]
		e.view(ekey, members[1:])
	}
	if id, ok := reply[0].(string); ok && mode == "1" {
		e.saw(ekey, id)
	}
	return reply[1:], nil
}

// Get implements [effect.Store]. It reads the record and checks the epoch;
// an absent key stays absent even while a loss is being quarantined.
func (e *Effects) Get(ctx context.Context, key effect.Key) (effect.Record, bool, error) {
	rest, err := e.run(ctx, getScript, e.s.key("fx", string(key)), 0, 0)
	if err != nil {
		return effect.Record{}, false, err
	}
	if len(rest) == 0 {
		return effect.Record{}, false, nil
	}
	v, _ := rest[0].(string)
	r, err := decode(v)
	return r, err == nil, err
}

// quarantine returns how long after a detected loss a claim that is not a
// beat is refused on an absent key: by then every owner still running has
// sent its claim again, and every Runner still reaching the server has
// written back the outcomes it keeps (see Effect records and store loss in
// the package documentation). beat is the claim's Beat, effect.DefaultPoll
// for zero.
func (e *Effects) quarantine(beat time.Duration) time.Duration {
	if beat <= 0 {
		beat = effect.DefaultPoll
	}
	return e.s.probe + 3*(beat+e.s.timeout)
}

// PutIfAbsent implements [effect.Store] with [putScript]: a Pending record
// with rec's Owner is the caller's own claim, resent. While the store's
// epoch quarantines a loss, a Pending rec that is not Renew is refused on
// an absent key, nothing stored: the error wraps [effect.ErrQuarantined]
// and carries as RetryAfter the quarantine's time left, or, once only
// members' write-backs are awaited, the lesser of that and the claim's
// Beat: each member's next poll may end it.
func (e *Effects) PutIfAbsent(ctx context.Context, key effect.Key, rec effect.Record) (effect.Record, bool, error) {
	d, err := encode(rec)
	if err != nil {
		return effect.Record{}, false, err
	}
	refusable := "0"
	if rec.State == effect.Pending && !rec.Renew {
		refusable = "1"
	}
	beat := rec.Beat
	if beat <= 0 {
		beat = effect.DefaultPoll
	}
	rest, err := e.run(ctx, putScript, e.s.key("fx", string(key)), e.quarantine(beat), beat,
		strconv.Itoa(int(rec.State)), rec.Owner, d, expiresAt(rec.Expires), refusable)
	if err != nil {
		return effect.Record{}, false, err
	}
	if len(rest) == 0 {
		return rec, true, nil
	}
	if len(rest) == 2 {
		left, _ := rest[1].(int64)
		return effect.Record{}, false, &portico.Error{Class: portico.Transient, Reason: "redisstore: records lost, claims refused",
			RetryAfter: time.Duration(max(left, 1)) * time.Millisecond, NotSent: true, Err: effect.ErrQuarantined}
	}
	v, _ := rest[0].(string)
	cur, err := decode(v)
	return cur, false, err
}

// Update implements [effect.Store] with [updateScript].
func (e *Effects) Update(ctx context.Context, key effect.Key, prev, next effect.Record) (bool, error) {
	d, err := encode(next)
	if err != nil {
		return false, err
	}
	rest, err := e.run(ctx, updateScript, e.s.key("fx", string(key)), 0, 0,
		strconv.Itoa(int(prev.State)), prev.Owner, strconv.Itoa(int(next.State)), next.Owner, d, expiresAt(next.Expires))
	if err != nil {
		return false, err
	}
	return len(rest) == 1 && rest[0] == int64(1), nil
}

// epochLua is the prologue of every effect script. KEYS[2] is the epoch
// hash (id, rid: the run_id of the server that last checked it, born and
// lost: unix milliseconds, lost 0 for none); ARGV[1] "1" to keep an epoch
// ("0": a Ring, none), ARGV[2] the epoch id the caller saw last ("" for
// none), ARGV[3] a new id, ARGV[4] "q/beat/ask": the caller's quarantine
// and Poll in milliseconds (0 for none), and "1" to have the members
// (memberScript) replied with the epoch, as {"id:lost", id, deadline, ...}. A server that refuses INFO in scripts (some
// managed services) gives no run_id: its failovers are then seen by the
// epoch id alone. epoch() returns "id:lost" (the epoch id and when a loss
// was last detected, 0 for never: a change of either is a loss) and, while absent keys are
// quarantined, the milliseconds the quarantine has left (else false): the
// store lost records (the epoch vanished while the caller knew one, or it
// is not the one the caller knew, or the server is another: restarted or
// promoted) less than a quarantine ago, or, after a loss, the field hold
// (memberScript's) is ahead: then the lesser of its time left and a Poll.
const epochLua = `
local function members(now, seen, prune)
  local all, out, last = redis.call('HGETALL', KEYS[2]), {seen}, 0
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'm:' then
      local bar = string.find(all[i + 1], '|', 1, true)
      local dl = tonumber(string.sub(all[i + 1], 1, bar - 1))
      if dl <= now then
        if prune then redis.call('HDEL', KEYS[2], all[i]) end
      else
        if string.sub(all[i + 1], bar + 1) ~= seen then last = math.max(last, dl) end
        out[#out + 1] = string.sub(all[i], 3)
        out[#out + 1] = string.sub(all[i + 1], 1, bar - 1)
      end
    end
  end
  return out, last
end
local function epoch()
  if ARGV[1] ~= '1' then return '', false end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local info, rid = redis.pcall('INFO', 'server'), ''
  if type(info) == 'string' then rid = string.match(info, 'run_id:(%x+)') or '' end
  local e = redis.call('HMGET', KEYS[2], 'id', 'rid', 'born', 'lost', 'hold')
  local id, lost = e[1], tonumber(e[4] or '0')
  if not id then
    id, lost = ARGV[3], 0
    if ARGV[2] ~= '' then lost = now end
    redis.call('HSET', KEYS[2], 'id', id, 'rid', rid, 'born', now, 'lost', lost)
  elseif e[2] ~= rid then
    lost = now
    redis.call('HSET', KEYS[2], 'rid', rid, 'lost', lost)
  elseif ARGV[2] ~= '' and ARGV[2] ~= id and lost == 0 then
    lost = tonumber(e[3])
    redis.call('HSET', KEYS[2], 'lost', lost)
  end
  local seen = id .. ':' .. lost
  local q, beat, ask = string.match(ARGV[4], '^(%d+)/(%d+)/(%d)$')
  if ask == '1' then seen = members(now, seen, false) end
  local left = lost + tonumber(q) - now
  if left <= 0 and tonumber(e[5] or '0') > now then left = math.min(tonumber(e[5]) - now, tonumber(beat)) end
  if lost > 0 and left > 0 then return seen, left, now end
  return seen, false, now
end
`

// memberScript: KEYS and ARGV[1..4] as for epoch(), KEYS[1] the epoch
// hash too; ARGV[5..] a Runner's id, the epoch ("id:lost") its Effects
// knew, "1" when the Runner has written back every loss its Effects
// counted, its hold in milliseconds (0: it leaves), "1" to publish, then
// the members the Effects saw last (id, deadline in unix ms, ...).
// Members are fields m:<id> of the epoch hash, "deadline|epoch": the epoch
// the member has written back for ("" for none). A member that has not
// written back for the current epoch holds absent keys (epoch()'s 'hold')
// until its deadline. The members seen last are published, as not written
// back, when this call finds the epoch changed or publish is "1": so a
// loss that wiped the hash waits for them. A member not written back
// keeps its deadline: waiting for it ends at its Hold. Returns {epoch,
// id, deadline, ...} of the live members.
var memberScript = redis.NewScript(epochLua + `
local seen, _, now = epoch()
if ARGV[1] ~= '1' then return {seen} end
if ARGV[9] == '1' or (ARGV[6] ~= '' and ARGV[6] ~= seen) then
  for i = 10, #ARGV, 2 do redis.call('HSETNX', KEYS[2], 'm:' .. ARGV[i], ARGV[i + 1] .. '|') end
end
local me, hold = 'm:' .. ARGV[5], tonumber(ARGV[8])
if hold == 0 then
  redis.call('HDEL', KEYS[2], me)
elseif ARGV[7] == '1' and ARGV[6] == seen then
  redis.call('HSET', KEYS[2], me, (now + hold) .. '|' .. seen)
else
  redis.call('HSETNX', KEYS[2], me, (now + hold) .. '|')
end
local out, last = members(now, seen, true)
redis.call('HSET', KEYS[2], 'hold', last)
return out
`)

// getScript: KEYS and ARGV[1..4] as for epoch(). Returns {epoch,
// encoded record} or {epoch}.
var getScript = redis.NewScript(epochLua + `
local id = epoch()
local cur = redis.call('HGET', KEYS[1], 'd')
if cur then return {id, cur} end
return {id}
`)

// putScript: KEYS and ARGV[1..4] as for epoch(); ARGV[5..] the state, the
// owner, the encoded record, its expiry in unix milliseconds, and "1" when
// the record is a claim to start a run (refused on an absent key during a
// quarantine). Returns {epoch, the stored encoded record} when there is
// one (unless it is this owner's Pending claim, then replaced by this
// one), {epoch, ”, milliseconds left} when it refuses, else {epoch}
// after storing this record.
var putScript = redis.NewScript(epochLua + `
local id, left = epoch()
local cur = redis.call('HGET', KEYS[1], 'd')
if cur then
  local v = redis.call('HMGET', KEYS[1], 's', 'o')
  if not (ARGV[5] == '1' and v[1] == '1' and v[2] == ARGV[6]) then return {id, cur} end
elseif left and ARGV[9] == '1' then
  return {id, '', left}
end
redis.call('HSET', KEYS[1], 's', ARGV[5], 'o', ARGV[6], 'd', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], ARGV[8])
return {id}
`)

// updateScript: KEYS and ARGV[1..4] as for epoch(); ARGV[5..] the
// previous state and owner, the next state, owner, encoded record and
// expiry in unix milliseconds. Replaces the record only when its state and
// owner are the previous ones (compare-and-swap): returns {epoch, 1}
// when it did, else {epoch, 0}.
var updateScript = redis.NewScript(epochLua + `
local id = epoch()
local v = redis.call('HMGET', KEYS[1], 's', 'o')
if v[1] ~= ARGV[5] or v[2] ~= ARGV[6] then return {id, 0} end
redis.call('HSET', KEYS[1], 's', ARGV[7], 'o', ARGV[8], 'd', ARGV[9])
redis.call('PEXPIREAT', KEYS[1], ARGV[10])
return {id, 1}
`)
