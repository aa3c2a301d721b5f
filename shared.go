package portico

// Shared puts a layer's state in a store that several processes share, so
// that one limit holds across every instance of a service, and says what
// the layer does while the store fails. One type for every layer that fails
// open: ratelimit.Config.Shared (S = ratelimit.Store, a Limiter's buckets)
// and retry.Budget.Shared (S = retry.BudgetStore, a Retrier's budgets). The
// zero value keeps the state in the process.
//
// When the store fails (an error, or no answer within its own timeout) the
// layer decides without it and reports an [EventSharedStore]: with
// FailOpen, on this instance's share of the limits (1/Instances of each,
// at least 1, kept in step with the store while it answers, so that it
// decides from an outage's first call); otherwise it refuses what needs
// the store. Each layer's documentation says what that is.
type Shared[S any] struct {
	// Store keeps the state; nil keeps it in the process (the default).
	Store S
	// FailOpen decides on this instance's share while the store fails,
	// instead of refusing. It needs Instances.
	FailOpen bool
	// Instances is N, the number of processes sharing the store; with
	// FailOpen each gets 1/N of the limits while the store fails. It must
	// be positive with FailOpen, and 0 without.
	Instances int
	// Name keeps a layer's state apart from other layers' on the same
	// Store: two layers share state only when their Names agree (the same
	// layer in every instance). Empty is a name like any other; package
	// stack names its client limiter "client" and each route's limiter
	// "route " and the route's name.
	Name string
}
