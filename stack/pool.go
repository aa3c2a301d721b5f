package stack

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/breaker"
)

// Key is one API key, or one deployment, of a key pool (see [Pool]): the
// adapter that calls with it and the label that names it.
type Key struct {
	// Label names the key wherever the pool's state and errors show it:
	// its route is named pool + "/" + Label, and so are its breaker,
	// limiter buckets, retry budget, cooldown, hops and spans. A name of
	// the caller's choosing ("eu-1"), or [KeyLabel] of the key; never the
	// key itself. Non-empty, without "/", unique in the pool.
	Label string
	// Model is the adapter that calls with this key (provider/openai's
	// New with option.WithAPIKey, say). Required.
	Model portico.Model
	// Weight is the key's share of the pool's requests, > 0 and finite;
	// zero means 1.
	Weight float64
	// Quota names the upstream quota the key draws on, when several keys
	// share one (keys of one account): a Retry-After on one of them cools
	// all of them down. Empty means the key's own.
	Quota string
}

// Pool returns a key pool: one route over several API keys or
// deployments of one model, as the routes of a Weighted group. Each key
// is route r with the key's Model, named pool + "/" + Label, with layers
// of its own from r's Configs; the package doc ("Key pools") says how a
// key is cooled, taken out and limited, and what the group answers when
// every key is out. Add the routes to Config.Routes and the group to
// Config.Groups (alone, the pool serves every request). r's Model and
// Quota are ignored; r's Name must be empty. Pool fails on an empty pool
// name or one with "/", no key, or a key without a Label or Model, with a
// Label twice or with "/", or with a negative or non-finite Weight.
func Pool(pool string, r Route, keys ...Key) ([]Route, Group, error) {
	if pool == "" || strings.Contains(pool, "/") || len(keys) == 0 || r.Name != "" {
		return nil, Group{}, fmt.Errorf("stack: Pool %q: a pool needs a name without \"/\", a key at least, and r's Name empty", pool)
	}
	routes := make([]Route, 0, len(keys))
	weights := make(Weighted, 0, len(keys))
	names := make([]string, 0, len(keys))
	for i, k := range keys {
		if err := checkKey(pool, i, k, keys[:i]); err != nil {
			return nil, Group{}, err
		}
		kr := keyRoute(r, pool+"/"+k.Label, k)
		routes = append(routes, kr)
		names = append(names, kr.Name)
		weights = append(weights, cmp.Or(k.Weight, 1))
	}
	return routes, Group{Name: pool, Routes: names, Kind: weights}, nil
}

// checkKey returns Pool's error for key i of pool, k, or nil; before are
// the keys before it, whose Labels k's must differ from.
func checkKey(pool string, i int, k Key, before []Key) error {
	if k.Label == "" || strings.Contains(k.Label, "/") || portico.IsNil(k.Model) ||
		slices.ContainsFunc(before, func(b Key) bool { return b.Label == k.Label }) {
		return fmt.Errorf("stack: Pool %q: key %d needs a Label of its own without \"/\" (%q) and a Model", pool, i, k.Label)
	}
	if !(k.Weight >= 0) || math.IsInf(k.Weight, 1) {
		return fmt.Errorf("stack: Pool %q: key %q's Weight %v is not >= 0 and finite", pool, k.Label, k.Weight)
	}
	return nil
}

// keyRoute is r as key k's route named name: k's Model and Quota, and the
// names that place its layers' state emptied, so that each is name.
func keyRoute(r Route, name string, k Key) Route {
	r.Name, r.Model, r.Capabilities.Quota = name, k.Model, k.Quota
	r.Breaker.Name, r.Retry.Destination, r.Trace.Name = "", "", ""
	if r.Breaker.Trip == nil {
		r.Breaker.Trip = keyTrip
	}
	if r.Limiter != nil {
		l := *r.Limiter
		l.Shared.Name = ""
		r.Limiter = &l
	}
	if r.Hedge != nil {
		h := *r.Hedge
		h.Destination = ""
		r.Hedge = &h
	}
	return r
}

// keyTrip is a key's breaker rule when r's is nil: [breaker.DefaultTrip],
// except on a RateLimited failure, which the pool's cooldown keeps the
// key out for until its Retry-After: a breaker tripped by a 429 storm
// (five in a row) would keep the key out for its OpenFor (30 s) past
// the end of the storm.
func keyTrip(c breaker.Counts) string {
	if c.Class == portico.RateLimited {
		return ""
	}
	return breaker.DefaultTrip(c)
}

// KeyLabel returns a label for a key that names it without revealing it:
// "key-" and the first 12 hex digits of its SHA-256, the same for the
// same key in every process, so that instances sharing a store agree.
func KeyLabel(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "key-" + hex.EncodeToString(sum[:6])
}
