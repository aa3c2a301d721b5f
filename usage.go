package portico

// Add returns the sum of u and o, field by field: the usage of two calls
// billed one after the other (the attempts of a continued stream, the
// failed calls of a retry layer's error).
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:        u.InputTokens + o.InputTokens,
		OutputTokens:       u.OutputTokens + o.OutputTokens,
		ReasoningTokens:    u.ReasoningTokens + o.ReasoningTokens,
		CachedInputTokens:  u.CachedInputTokens + o.CachedInputTokens,
		CacheWriteTokens:   u.CacheWriteTokens + o.CacheWriteTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens + o.CacheWrite1hTokens,
		LimitExemptTokens:  u.LimitExemptTokens + o.LimitExemptTokens,
	}
}

// Limited returns the tokens of u that count against the provider's token
// rate limits: InputTokens less LimitExemptTokens (clamped to the input),
// plus OutputTokens. It is what package ratelimit settles a call's token
// reservation on. Negative counts are taken as zero.
func (u Usage) Limited() int {
	in := max(u.InputTokens, 0)
	return in - min(max(u.LimitExemptTokens, 0), in) + max(u.OutputTokens, 0)
}

// inputParts splits u's input as it is billed: plain input, cache reads,
// cache writes at the short TTL and at one hour. Each part is clamped so
// that they add up to InputTokens, reads first, then writes, the one-hour
// writes within the writes; negative counts are taken as zero.
func (u *Usage) inputParts() (plain, read, write5m, write1h int) {
	in := max(u.InputTokens, 0)
	read = min(max(u.CachedInputTokens, 0), in)
	write := min(max(u.CacheWriteTokens, 0), in-read)
	write1h = min(max(u.CacheWrite1hTokens, 0), write)
	return in - read - write, read, write - write1h, write1h
}
