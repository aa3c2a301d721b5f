package failopen

import (
	"errors"
	"strconv"
)

// Check returns an error naming the field (Config.Shared, say) when a
// portico.Shared with or without a store (hasStore) is invalid: a negative
// Instances, FailOpen or Instances without a store, one without the other.
func Check(field string, hasStore, failOpen bool, instances int) error {
	switch {
	case instances < 0:
		return errors.New("negative " + field + ".Instances (" + strconv.Itoa(instances) + ")")
	case !hasStore && (failOpen || instances != 0):
		return errors.New(field + ".FailOpen or Instances without a Store")
	case failOpen && instances == 0:
		return errors.New(field + ".FailOpen without Instances")
	case !failOpen && instances != 0:
		return errors.New(field + ".Instances without FailOpen")
	}
	return nil
}

// Prefix returns the prefix of the keys a layer named name gives its
// store: name, length-prefixed, even empty, so that no two (name, key)
// pairs make one key.
func Prefix(name string) string { return strconv.Itoa(len(name)) + ":" + name + "|" }

// Share returns one instance's share of v among n instances: v/n rounded
// down, at least 1; 0 (no bucket) stays 0.
func Share(v int64, n int) int64 {
	if v == 0 {
		return 0
	}
	return max(v/int64(n), 1)
}

// Charge returns level after a charge of cost >= 0 that the store admitted:
// lowered by cost, but not below zero; a level already below zero (a
// surcharge) stays.
func Charge[T int64 | float64](level, cost T) T {
	return min(level, max(level-cost, 0))
}

// Refused returns level after the store refused a call, left being what
// the shared bucket held (0 when unknown beyond "not enough"): at most
// 1/n of left.
func Refused[T int64 | float64](level, left T, n int) T {
	return min(level, max(left, 0)/T(n))
}

// Lead returns how much of a call's cost a share may run ahead of what it
// holds among n instances: (n-1)/n. A share admits a call once it holds
// 1/n of the call's cost, charging the whole, so that the fractions of a
// call that the n shares hold apart (none of which covers a call alone)
// are not lost to every instance; each share then owes less than the
// call's cost and pays it back by its refill before its next call.
func Lead(n int) float64 { return float64(n-1) / float64(n) }
