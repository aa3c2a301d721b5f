package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/portico-llm/portico"
)

// maxBreakpoints is the most cache_control blocks a request may carry
// ("You can define up to 4 cache breakpoints",
// https://docs.claude.com/en/docs/build-with-claude/prompt-caching).
const maxBreakpoints = 4

// cacheControl is the cache_control of a breakpoint of ttl: ephemeral,
// with ttl "1h" for Cache1h and the API's default (5 minutes) for Cache5m;
// the zero value, which the SDK leaves out, for NoCache.
func cacheControl(ttl portico.CacheTTL) sdk.CacheControlEphemeralParam {
	switch ttl {
	case portico.NoCache:
		return sdk.CacheControlEphemeralParam{}
	case portico.Cache1h:
		c := sdk.NewCacheControlEphemeralParam()
		c.TTL = sdk.CacheControlEphemeralTTLTTL1h
		return c
	}
	return sdk.NewCacheControlEphemeralParam()
}

// markLast sets the cache_control of ttl on the last of blocks, if any and
// ttl marks a breakpoint: a message's breakpoint ends its last block.
func markLast(blocks []sdk.ContentBlockParamUnion, ttl portico.CacheTTL) {
	if ttl == portico.NoCache || len(blocks) == 0 {
		return
	}
	if c := blocks[len(blocks)-1].GetCacheControl(); c != nil {
		*c = cacheControl(ttl)
	}
}

// Errors of breakpoints: the request on this route, before sending.
var (
	errTooManyBreakpoints error = &portico.Error{Class: portico.Incompatible, Reason: "more than 4 cache breakpoints", NotSent: true}
	errBreakpointOrder    error = &portico.Error{Class: portico.Incompatible, Reason: "1h cache breakpoint after a 5m one", NotSent: true}
	errUnknownCacheTTL    error = &portico.Error{Class: portico.Permanent, Reason: "unknown CacheTTL", NotSent: true}
)

// breakpoints checks req's cache breakpoints as the API would, before
// sending: at most 4, and every one-hour breakpoint before every
// five-minute one in the order of the prompt (the system prompt, where
// system messages go, then the other messages), as "cache entries with
// longer TTL must appear before shorter TTLs" (the same page, "Mixing
// different TTLs"); either is Incompatible (another provider takes it). A
// CacheTTL outside the constants is Permanent. The errors are shared and
// must not be modified.
func breakpoints(req *portico.Request) error {
	n, short := 0, false
	for _, system := range [...]bool{true, false} {
		for i := range req.Messages {
			m := &req.Messages[i]
			if (m.Role == portico.RoleSystem) != system {
				continue
			}
			for j := range m.Content {
				if err := breakpoint(m.Content[j].Cache, &n, &short); err != nil {
					return err
				}
			}
			if err := breakpoint(m.Cache, &n, &short); err != nil {
				return err
			}
		}
	}
	return nil
}

// breakpoint counts ttl into n and short (a five-minute one seen).
func breakpoint(ttl portico.CacheTTL, n *int, short *bool) error {
	switch ttl {
	case portico.NoCache:
		return nil
	case portico.Cache5m:
		*short = true
	case portico.Cache1h:
		if *short {
			return errBreakpointOrder
		}
	default:
		return errUnknownCacheTTL
	}
	if *n++; *n > maxBreakpoints {
		return errTooManyBreakpoints
	}
	return nil
}
