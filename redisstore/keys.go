package redisstore

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"strconv"
)

// maxPart is the longest encoded part of a key kept readable; a longer one
// is replaced by its digest (see part).
const maxPart = 96

// maxKeyLen is the most bytes a key of the Store has beyond
// Config.Prefix, whatever the tenant ids, destinations, route and model
// names, or execution keys it is built from: two encoded parts of at most
// 96 bytes each and the kind, tag and separators.
const maxKeyLen = 2*maxPart + 10

// part encodes one user-supplied part of a key (a tenant id, a
// destination, a Limiter key, an execution key) so that distinct parts
// never share an encoding, none holds a brace (a tenant cannot end a hash
// tag and choose its Cluster slot) and none exceeds maxPart bytes:
//
//   - bytes outside [A-Za-z0-9] and "-._:/|@+=" become %XX (upper-case
//     hex), '%' itself included: injective, and readable for the ids
//     people use;
//   - when that exceeds maxPart bytes, the part is "#" followed by the
//     unpadded base64url SHA-256 of its bytes (44 bytes). An escaped part
//     never starts with '#' (it would be %23), so the two forms never
//     meet, and two digests meet only on a SHA-256 collision.
//
// Every key of every kind is built with part, in key and in opKey: one
// rule for every store.
func part(s string) string {
	n := 0
	for i := range len(s) {
		if n += 1 + 2*escaped(s[i]); n > maxPart {
			h := sha256.New()
			io.WriteString(h, s)
			return "#" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
		}
	}
	if n == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, n)
	for i := range len(s) {
		if c := s[i]; escaped(c) == 1 {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// escaped is 1 when part escapes c, else 0.
func escaped(c byte) int {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return 0
	}
	switch c {
	case '-', '.', '_', ':', '/', '|', '@', '+', '=':
		return 0
	}
	return 1
}

// tag returns the hash tag of the keys of tagged, "{k=" + part(tagged) +
// "}": every key one script touches carries the same tag, so one slot of a
// Cluster holds them all. The "k=" keeps it from being empty (an empty tag
// hashes the whole key); part keeps braces out of it.
func tag(tagged string) string { return "{k=" + part(tagged) + "}" }

// key returns the key of kind (two letters) for tagged: the prefix, the
// kind and the tag. A kind that needs a second part appends ":" and a
// letter and part() of it (see Budgets.keys).
func (s *Store) key(kind, tagged string) string { return s.prefix + kind + ":{k=" + part(tagged) + "}" }

// opKey returns the key of the record of a new operation on the keys of
// tagged: in their slot, named by an id unique across instances (a random
// base drawn by [New]) and within one (a counter). A script given it
// applies once however often the client sends it (see once in the
// scripts).
func (s *Store) opKey(tagged string) string {
	var id [16]byte
	return s.prefix + "op:{k=" + part(tagged) + "}:" + s.opBase + string(strconv.AppendUint(id[:0], s.ops.Add(1), 36))
}

// onceLib runs a script's body once per operation: KEYS' last is the
// operation's record (see opKey), ARGV's last its TTL in milliseconds,
// both removed before the body runs. A resent script finds the record and
// returns the first run's reply (an integer or a list of integers)
// without applying anything again. With ok, the record of the reply most
// runs give ('t0,0' for {0, 0}), the record is written before the body
// runs, by the same SET NX GET that looks for it, and written again only
// when the reply differs: one command instead of two in the common case.
const onceLib = `
local function once(body, ok)
  local op = table.remove(KEYS)
  local ttl = table.remove(ARGV)
  local prev
  if ok then
    prev = redis.call('SET', op, ok, 'NX', 'PX', ttl, 'GET')
  else
    prev = redis.call('GET', op)
  end
  if prev then
    if string.sub(prev, 1, 1) ~= 't' then return tonumber(prev) end
    local r = {}
    for v in string.gmatch(string.sub(prev, 2), '[^,]+') do table.insert(r, tonumber(v)) end
    return r
  end
  local r = body()
  local rec
  if type(r) == 'table' then
    local parts = {}
    for i, v in ipairs(r) do parts[i] = string.format('%.0f', v) end
    rec = 't' .. table.concat(parts, ',')
  else
    rec = string.format('%.0f', r)
  end
  if rec ~= ok then redis.call('SET', op, rec, 'PX', ttl) end
  return r
end
`
