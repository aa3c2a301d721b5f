// Package binom is the bound that tests of a random split assert: how far
// a count of successes in n independent draws of probability p may stray
// from its mean n*p. A split's test asserts this bound, not an exact
// count, so it holds whatever the random numbers were.
package binom

import "math"

// Z is the bound in standard deviations. With the normal approximation
// of the binomial, a count strays beyond it with probability 6.8e-6 (two
// tails): a test that asserts it fails by chance about once in 150,000
// runs.
const Z = 4.5

// Bound returns Z standard deviations of a binomial count of n draws of
// probability p, Z*sqrt(n*p*(1-p)): 65.2 for 1,000 draws at 0.7.
func Bound(n int, p float64) float64 {
	return Z * math.Sqrt(float64(n)*p*(1-p))
}

// Within reports whether count lies within Bound(n, p) of n*p.
func Within(count, n int, p float64) bool {
	return math.Abs(float64(count)-float64(n)*p) <= Bound(n, p)
}
