// Package spend keeps spend budgets: the most each tenant (a client key,
// a tier, or any key of the caller's choosing) may spend per calendar
// minute, hour, day or month, in the price unit of
// [portico.Capabilities] (say US dollars).
//
// # The rule
//
// [Budgets.Wrap] admits a request while every budget of its key has spent
// less than its amount in the current window, and reserves the request's
// estimated cost in each ([Budgets.Estimate]: the input estimate and N_max
// at the prices of the most expensive route that fits it, the estimate
// [portico.Capabilities.EstimateCost] that routers rank by). When the call
// ends it settles: an answer's Response.Cost replaces the reservation, a
// call that sent nothing ([portico.NothingSent], the rule every limiter's
// refund reads) is refunded whole, and any other error keeps the
// reservation, since it may have been billed. A key whose budget is spent
// is refused with a [portico.RateLimited] error, RefusedBy
// [portico.SpendBudget], whose RetryAfter is the time until the window
// renews and whose [*SpentError] names the window, the amount and the
// renewal.
//
// Windows are calendar periods in UTC (a Day budget renews at 00:00 UTC, a
// Month budget on the 1st), the period an invoice covers; the clock read
// is the admitting instance's, and a call is settled in the windows it was
// admitted in, whenever it ends. A key's state is one amount per window
// kind, so its memory is fixed; [Memory] drops keys whose windows all
// ended, and package redisstore's keys expire with their window.
//
// # The overspend bound
//
// Take one key and one window, and the operations on its spent amount V
// (reservations of calls under way included) in the order the store
// applies them, each atomically: an admission of a call with estimate k,
// allowed only when V < L, adds k; a settlement adds C - k for an answer
// of cost C, -k for a call that sent nothing, 0 for another error. Let j
// be the last admission: just before it V < L, just after it V < L + k_j.
// Every later operation is a settlement, which adds C - k <= 0 whenever
// the call cost no more than its estimate. So the window ends having
// spent
//
//	S  <  L + k_j  <=  L + one request's estimate,
//
// however many instances and calls race: the reservation of every call
// under way counts before the next is admitted. A call can cost more than
// its estimate when the input estimate is low (the default estimator
// undercounts code and non-Latin scripts) or a routing layer adds billed
// failures or a losing hedge to Response.Cost; each such call in flight at
// the last admission adds its excess C - k to the bound. Over a shared
// store the bound is the same, since one script applies each operation
// atomically for every instance (package redisstore:
// TestSpendBoundTenInstances). While a shared store fails with FailOpen,
// each of N instances decides on 1/N of each limit from zero, so a window
// may spend up to L + N·k more than the store had recorded.
//
// # Budget-aware routing
//
// With [Config.Steer], a key whose budgets have less left than the
// request's estimate is sent on with Contract.MaxCost lowered to what is
// left, when a route fits the request so: the routing layer below
// ([portico.Capabilities.Fits]) skips the routes that could spend more,
// and the cheaper route answers (TestSteerToCheaperRoute).
//
// # Sharing
//
// [Config.Shared] takes a [Store] shared by every instance: package
// redisstore's SpendStore applies each reservation (every window of the
// key) in one script and one round trip. Package stack places the layer
// (stack.Config.Spend) below the client rate limiter and above the routes,
// filling Routes and Estimator from the stack's.
package spend
