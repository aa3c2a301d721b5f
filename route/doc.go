// Package route decides which model answers a call: it chooses before calling
// (a threshold router after RouteLLM, or a general ranked router), calls in
// cost order and stops at the first acceptable answer (a cascade, after
// FrugalGPT), and spreads calls over replicas of one model with their prefix
// caches in mind (a balancer, after Autellix and Preble).
//
// Every router here filters candidates with [portico.Capabilities.Fits], the
// one filter package fallback also uses, and skips routes whose Health says
// they are unavailable (an open breaker). A request Fits finds wrong on any
// route (its Permanent error) is refused at once, calling nothing; when no
// route is available, the error's RetryAfter is the least time until one
// takes calls again ([portico.Health].RetryAfter). A route's fault, Unusable
// included, takes it out of rotation through its breaker, and a [Cascade]
// moves on from it to its next step. A request whose context is done
// already is refused with [portico.Gone]'s error before any route is picked
// or called. Each is a [portico.Model], so it slots wherever a Model goes.
//
// # Choose before calling: Threshold and Router
//
// [Threshold] is RouteLLM's router over a strong and a weak route: a [Scorer]
// predicts the probability that the strong model's answer wins, and above the
// threshold the call goes strong. [HeuristicScore] is a documented hand-set
// logistic over request features (length, code fences, tools, schema, question
// marks, math and code keywords): a heuristic with no trained weights.
// [Calibrate] turns a sample of requests and a target share of strong calls
// into the threshold (a quantile of the scores, exact on the sample when scores
// are distinct; ties go weak). Sweeping the threshold traces the cost–quality
// curve.
//
// [Router] ranks N routes with a [rank.Policy] over a [rank.Candidate]'s
// estimated cost, latency and TTFT averages, error rate, last failure, calls
// in flight and static weight ([rank.ByCost], [rank.ByLatency],
// [rank.ByHealth], [rank.Weighted]): the vocabulary package fallback shares. [Router.Pick] is a
// grpc-go-style picker: it never blocks, takes a [PickInfo] and returns a
// [PickResult] whose Done feeds the outcome back into the statistics.
//
// # Call in cost order: Cascade
//
// [Cascade] is FrugalGPT's cascade (Chen, Zaharia and Zou, "FrugalGPT: How
// to Use Large Language Models While Reducing Cost and Improving
// Performance", 2023): steps in cost order, each with an
// acceptance scorer g(x, y) ([Acceptor]) and threshold tau_j; it stops at the
// first accepted answer, and otherwise returns the last answer or a classified
// error ([NoneAccepted]). With u_j the chance that step j's answer is accepted
// after the earlier ones were not,
//
//	E[C] = c1 + (1-u1) c2 + (1-u1)(1-u2) c3 + ...
//
// so two steps beat the second alone iff u1 > c1/c2: with c1 = 1, c2 = 10 and
// u1 = 0.8 a cascade costs 3 per call against 10 (the tests reproduce it).
// Latency composes the same way. The Response records the step that
// answered (Route), the realised cost of every step called (Cost) and the
// steps left (Hops).
//
// A cascade cannot stream a step's answer to the caller while that answer
// may still be rejected: the tokens cannot be taken back. So by default it
// buffers each step's chunks and replays those of the accepted answer, in
// order, when the cascade ends (TTFT is then the cascade's whole latency).
// Each chunk held back is reported with [portico.Progress], so a retry layer
// outside sees a live stream and its first-chunk and gap timeouts do not
// fire on a slow but advancing step. CascadeConfig.StreamLast lets the last
// step stream live; if it then fails, its error is returned as is.
//
// Under a deadline a step that a later one could follow (it fits and is
// available) gets CascadeConfig.Share of the time left, 0.5625 by default
// as in package fallback, so that a hung cheap step leaves the strong one
// time to answer: its cut is Ambiguous with cause [ErrStepTimeout], and one
// after less than [DefaultStepFaultAfter] is an unanswered cut of the
// caller's deadline ([portico.ErrUnanswered]), which a breaker counts in its
// run of consecutive failures only, as it counts a fallback group's: a step
// that answers none of five calls in a row opens, one that answers others
// does not.
//
// # Spread over replicas: Balancer
//
// [Balancer] places calls on replicas of one model with an interchangeable
// [Strategy] (grpc-go's builder and picker):
//
//   - [RoundRobin]: cyclic order;
//   - [LeastInFlight]: the less busy of two random replicas (power of two
//     choices);
//   - [Affinity]: Autellix's rule: short calls to the least-used replica,
//     long ones to their program's (Identity.SessionID);
//   - [PrefixAware]: Preble's E2 over a client-side index of the prompt
//     blocks sent to each replica (see Prefix-aware placement below).
//
// Round robin and least-in-flight ignore caches; the package's simulation
// test (agent programs with growing prompts, a shared system prompt, and a
// burst on one hot prefix) pins that affinity and prefix-aware placement hit
// the cache far more often than the cache-blind pair, and that the rebalance
// keeps the hot burst within the factor, where plain E2 herds it onto one
// replica.
//
// # Prefix-aware placement
//
// [PrefixAware]'s picker keeps, per replica, a client-side index of the
// prompt blocks recently sent there (within the window H). For each call it
// hashes the prompt once into a chain of fixed-size block hashes, and looks
// up in each available replica's index how many leading blocks it holds:
// L_hit(g), and L_miss(g) = L - L_hit(g), in tokens (bytes / BytesPerToken).
// Then:
//
//   - exploit: if on the best replica L_hit > L_miss (more than half the
//     prompt is cached), go to it; among replicas with the same L_hit, the
//     least loaded (fewest calls in flight, then least Q);
//   - explore: otherwise go to the replica minimising C_g = Q_g + E_g + R_g,
//     where Q_g is its recent load (the sum over calls placed there within H
//     of their missed tokens plus DecodeWeight times its mean output tokens),
//     E_g the tokens of the cached blocks that the new blocks would evict
//     from a full index (the least recently sent, never the call's own cached
//     prefix), each weighted by its hit rate (the calls that sent it within
//     the window, over epochs of width H, divided by the calls placed on the
//     replica within the window, as in Preble), and R_g = L_miss(g), its own
//     prefill;
//   - rebalance: if the exploit target is overloaded, (in flight + 1) >
//     RebalanceFactor * (least in flight + 1), go to the least loaded replica
//     instead, which then caches the hot prefix too and shares its later
//     calls.
//
// The rebalance reads calls in flight, not Preble's windowed Q: a window
// reads a sudden burst on a hot prefix late, while calls in flight see it on
// the next call. The +1 keeps one or two calls on an otherwise idle fleet
// from bouncing agents off their caches. The chosen replica's index then
// records every block of the prompt; each index holds at most MaxBlocks
// blocks, evicting the least recently sent, and forgets blocks older than H.
// Not taken from Preble: the prefix-replication trigger on queueing delay and
// the rule sending prefill-heavy calls to decode-heavy replicas; the index
// models the replica's cache but does not see the replica's own evictions
// (set MaxBlocks near the replica's cache size in blocks).
//
// # Why the Balancer is a Model and has no Wrap
//
// Every other layer of Portico is a [portico.Middleware], func(Model) Model,
// with a method value such as b.Wrap. A balancer cannot be one: a Middleware
// receives one next Model, and a balancer's whole job is to choose among
// several, each a different endpoint with its own breaker, limits and cache.
// A Wrap(next) form would have to ignore next, or pretend that one Model can
// reach every replica through some provider-specific request field; either
// would mislead. So [Balancer], like [Router], [Threshold] and [Cascade], is a
// [portico.Model] built from its routes. Layers still compose around and
// inside it:
//
//	perReplica := func(name string, m portico.Model) portico.Route {
//		br := breaker.MustNew(breaker.Config{})
//		return portico.Route{Name: name, Model: portico.Chain(m, br.Wrap), Health: br}
//	}
//	bal, _ := route.NewBalancer(route.BalancerConfig{
//		Replicas: []portico.Route{perReplica("a", a), perReplica("b", b)},
//		Strategy: route.PrefixAware{},
//	})
//	stack := portico.Chain(bal, limiter.Wrap, retrier.Wrap) // layers around all replicas
//
// The breaker as the route's Health lets the balancer skip an open replica
// without calling it; a retry outside the balancer places each attempt anew.
//
// # Concurrency and cost
//
// Every type is safe for concurrent use. Round-robin and least-in-flight picks
// take no lock and do not allocate: a pick is one atomic add on the chosen
// replica's packed counter, and Done is one more. Prefix-aware picks hash the
// prompt once, take one mutex and do not allocate. [Router.Pick] does not
// allocate when a route is found; Router.Generate and Balancer.Generate add
// no allocation to the Model's own unless the request streams
// (bench_test.go measures each).
package route
