// Package failopen is the one rule by which a layer whose buckets live in a
// store shared by N instances decides while the store fails, when it fails
// open: package ratelimit's request and token buckets and package retry's
// budgets (portico.Shared) both follow it, and ratelimit's documentation
// (Shared buckets) states it and its bound for users.
//
// Each instance keeps, per key, a local share of each bucket, 1/N of its
// capacity and refill ([Share]), whether or not the store answers: charged,
// never below zero, for what the store admits for this instance
// ([Charge]); lowered to 1/N of what the store had left when it refuses
// ([Refused]); and deciding alone while the store fails, on what this
// instance had not used, admitting a call once it holds 1/N of the call's
// cost ([Lead]). It is never emptied or filled as an outage begins or
// ends, so a store that flaps hands out nothing.
package failopen
