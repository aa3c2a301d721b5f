package trace

import (
	"cmp"

	"github.com/portico-llm/portico"
)

// Route is one route's own tracing settings, for [Tracer.ForRoute]. Empty
// fields keep the Tracer's own.
type Route struct {
	// Name is the route's name, the portico.route attribute of its attempt
	// spans.
	Name string
	// Provider is the route's gen_ai.provider.name (see Config.Provider): on
	// its attempt spans as portico.attempt.provider, and on the request span
	// when the route answers.
	Provider string
	// Model names the route's model when Request.Model is empty at the
	// attempt (the adapter's own default model): the attempt span's name and
	// portico.attempt.model, and the request span's name and
	// gen_ai.request.model when the route answers a request without a Model.
	Model string
	// ServerAddress and ServerPort are the route's server.address and
	// server.port, on its attempt spans and on the request span when it
	// answers.
	ServerAddress string
	ServerPort    int
	// Pricing prices the route's attempts for portico.attempt.cost (see
	// Config.Pricing); usually &route.Capabilities.
	Pricing *portico.Capabilities
}

// ForRoute returns a Tracer for one route's attempt layer: it shares t's
// providers, instruments, logger, propagator and content settings, and
// describes the route's calls with r (empty fields keep t's). Give each
// route's [Tracer.WrapAttempt] its own, and the request span says which
// route answered: the answering route's provider, server and model replace
// those of the request layer's Tracer. It is safe for concurrent use, and
// cheap enough to call once per route when a stack is built.
func (t *Tracer) ForRoute(r Route) *Tracer {
	n := &Tracer{
		cfg: t.cfg, op: t.op, tracer: t.tracer, inst: t.inst, log: t.log, prop: t.prop,
		startOpts: t.startOpts, noop: t.noop, inert: t.inert, global: t.global,
		route: cmp.Or(r.Name, t.route), model: cmp.Or(r.Model, t.model),
	}
	n.cfg.Provider = cmp.Or(r.Provider, t.cfg.Provider)
	n.cfg.Pricing = cmp.Or(r.Pricing, t.cfg.Pricing)
	if r.ServerAddress != "" {
		n.cfg.ServerAddress, n.cfg.ServerPort = r.ServerAddress, r.ServerPort
	}
	return n
}

// labels are the GenAI names of a request as its span, metrics and log
// record report them: the request layer's own, or the answering route's.
type labels struct {
	provider, server, model string
	port                    int
}
