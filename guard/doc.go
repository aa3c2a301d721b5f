// Package guard runs input guardrails: checks of a request made before
// it is sent (a deny-list of patterns, a size rule, a remote moderation
// call), each a function of the request ([Check]).
//
// # The rule
//
// [Guards.Wrap] runs each [Guardrail] of its Config in order, before the
// layers below it are called. A check has three outcomes:
//
//   - It passes (nil): the next check runs, and the request goes on when
//     every check passed.
//   - It refuses the request ([Deny]: an error whose tree holds a
//     [*Refusal]): the call fails, nothing sent, with a [portico.Permanent]
//     *portico.Error, NotSent, wrapping a *Refusal that names the
//     guardrail and its rule. It is the request's fault, as a request
//     [portico.Request.Validate] refuses: [portico.FaultOf] says
//     FaultRequest, so no breaker, throttle, rank or adaptive limit counts
//     it against a route, and routing layers stop at once.
//   - The checker itself fails: it returns another error, or runs past
//     its Guardrail.Timeout (a moderation service that does not
//     answer). The guardrail's policy decides: FailOpen lets the request
//     go on as if the check had passed; otherwise (fail closed, the zero
//     value) the call fails, nothing sent, with a [portico.Rejected]
//     *portico.Error, NotSent, wrapping a [*CheckError] that names the
//     guardrail and how it failed: a refusal of this process, which no
//     layer counts against a route ([portico.FaultLocal]) nor the request.
//
// A checker that panics has a bug, which no policy hides: the panic
// passes through to the caller, as through every layer, nothing sent.
// A caller's context done during a check ends the call with
// [portico.Gone]'s error (Canceled or Deadline, the caller's), whatever
// the policy. Each check runs in the caller's goroutine with a context
// that ends after its Timeout; a Check must return when its context is
// done.
//
// # What an error says
//
// No prompt text reaches an error, a log or a span: a refusal names the
// guardrail and the rule (Deny's argument, which must be an identifier,
// never the text that matched), and a checker's failure names the
// guardrail and its kind ("error", "timeout"). A checker's own error is
// kept in the tree for errors.Is and errors.As, but its message is not
// repeated. Each outcome reports a [portico.EventGuard] with the
// guardrail's name and the outcome as its Reason.
//
// # Where it sits
//
// In package stack (stack.Config.Guard) the guardrails run before
// anything is spent on the request: inside the request span and before
// the response cache, the deadline, the client rate limiter, the spend
// budgets and the routes; a refused request takes no token, slot or
// budget and is never answered from the cache.
package guard
