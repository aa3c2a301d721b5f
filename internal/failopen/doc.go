// Package failopen is the one rule by which a layer whose buckets live in a
// store shared by N instances decides while the store fails, when it fails
// open: package ratelimit's request and token buckets and package retry's
// budgets (portico.Shared, in ratelimit.Config and retry.Budget) both
// follow it, and
// ratelimit's documentation (Shared buckets) states it for users.
//
// Each instance keeps, per key, a local share of each bucket: capacity
// and refill 1/N of the shared bucket's ([Share]). The share is kept
// whether or not the store answers, and follows what the store decides
// for this instance:
//
//   - what the store admits (a call's tokens, a retry's token) is charged
//     to the share too, never below zero ([Charge]): an instance that used
//     more than its share while the store decided is not in debt when it
//     fails; refunds and deposits are credited, never beyond capacity;
//   - a refusal lowers the share to 1/N of what the store had left
//     ([Refused]): the instances that saw the shared bucket empty hold
//     nothing of it;
//   - while the store fails, the share alone decides, from the first call
//     of the outage, on what this instance had not used of its share, and
//     refills at 1/N of the rate. It is never emptied or filled as an
//     outage begins or ends, so a store that flaps hands out nothing. A
//     call is admitted once the share holds 1/N of its cost ([Lead]): N
//     shares cannot pool the fractions of a call each holds, and without
//     it an outage of a few seconds over 3 instances at 1 request a second
//     admits 3 of the 5 the shared bucket would.
//
// The bound: over any interval dt the N instances together admit at most
// b + r·dt + A, where the allowance A is r·d, d the time within dt during
// which the store failed (its bucket refills meanwhile and is not charged
// for what the shares admitted), plus what the shares held as the outage
// began, which the store still holds too: about 0 when the store's bucket
// was empty (spent, or refused to them); about the store's own level when
// the instances shared the load and it had refused none of them, since
// each share mirrors its 1/N of the bucket (retry's
// TestSharedFailOpenExcess: 18 of 30); b·(N-1)/N when one instance spent
// the whole burst and the others, having seen no refusal, call only once
// the store has failed; never more than b. Plus (N-1)·k for the lead, k
// the largest call's cost (1 for the request bucket).
package failopen
