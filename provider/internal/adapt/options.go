package adapt

// Options returns one SDK option that applies each of opts in turn, for
// the Stainless SDKs (openai-go, anthropic-sdk-go), whose option type is an
// interface over an internal config type: C is inferred from it, so the
// result is that option type without naming its package.
func Options[C any](opts ...interface{ Apply(C) error }) Applier[C] {
	return Applier[C](opts)
}

// Applier applies options in order; see [Options].
type Applier[C any] []interface{ Apply(C) error }

// Apply applies each option to c, stopping at the first error.
func (a Applier[C]) Apply(c C) error {
	for _, o := range a {
		if err := o.Apply(c); err != nil {
			return err
		}
	}
	return nil
}
