// Package respcache is an exact-match response cache: a request answered
// once is answered again from the cache, without a call, while the answer
// is fresh.
//
// # The key
//
// A request's key is the SHA-256 of its canonical JSON (RFC 8785, the
// canonicalization package effect's keys use, [effect.Fingerprint]): the
// model, the messages, the tools, the schema, MaxOutputTokens, the
// reasoning setting, Extra (the sampling parameters: temperature, top_p,
// seed...), the Prefix and the Contract's model classes, with the
// request's scope. Requests equal as JSON values, whatever their key order
// or number spelling, share a key; any other difference is another key.
// A key holds no prompt text and no tenant id, so a shared store learns
// neither. Limits on the way (deadlines, MaxCost) are not in it.
//
// # Scope
//
// Answers are shared within a scope, by default the tenant
// (Identity.ClientKey): no tenant is served another's answer unless
// [Config.Scope] says so.
//
// # What is cached
//
// Only an answer the layers below returned without error and that ended
// naturally (FinishStop or FinishToolCalls): in package stack the cache
// is outermost, so such an answer passed each route's validation. Errors,
// truncated and filtered answers never are. An answer lives for
// [Config.TTL]; [Memory] keeps the most recently used within a bound of
// entries and bytes, package redisstore's RespCache lets the server
// expire them.
//
// # Where it sits
//
// A cache must be consulted before anything is spent on a request: in
// package stack (stack.Config.Cache) it is the first layer inside the
// request span, before the user middleware, the deadline, the client rate
// limiter and the spend budgets, so a hit takes no token, budget, slot or
// route call. Each lookup reports an [portico.EventCache], which package
// trace counts in the portico.cache.lookups metric and records as a span
// event; [Cache.Stats] counts them too.
//
// A streamed request hit is served as a stream: the text in chunks of at
// most 64 bytes. A hit costs a key (a JSON encoding, its canonical form and
// a hash) and a store lookup; BenchmarkHit and BenchmarkMiss measure it.
package respcache
