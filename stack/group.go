package stack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/portico-llm/portico"
)

// Group is a model group: the routes a request naming the group in its
// Model is sent to, and how they are chosen. Several groups share one
// stack's routes (a route in two groups is one route: one breaker, one
// limiter, one retry budget) and its client limiter and deadline.
type Group struct {
	// Name is what Request.Model says to select the group ("fast",
	// "smart"). It must be non-empty and unique, and no alias
	// (Config.Aliases).
	Name string
	// Routes names the group's routes among Config.Routes, in order of
	// preference; at least one, each once.
	Routes []string
	// Kind is how the group chooses among its routes; nil means the
	// fallback group in order (see [Kind]).
	Kind Kind
}

// dispatch sends a request to the group its Model names (after the
// aliases), the Model cleared, so that each route is called with its own
// ModelName or its adapter's model; any other request to the default
// group, with its Model (renamed when an alias names a model).
type dispatch struct {
	def     portico.Model
	groups  map[string]portico.Model
	aliases map[string]string
}

func (d *dispatch) Generate(ctx context.Context, req *portico.Request) (*portico.Response, error) {
	name, aliased := d.aliases[req.Model]
	if !aliased {
		name = req.Model
	}
	if g, ok := d.groups[name]; ok {
		c := req.Clone()
		c.Model = ""
		return g.Generate(ctx, c)
	}
	if aliased {
		c := req.Clone()
		c.Model = name
		req = c
	}
	return d.def.Generate(ctx, req)
}

// groups returns what the stack calls below its client limiter: without
// Config.Groups and Config.Aliases, the group of every route
// (Config.Kind); otherwise a dispatch on Request.Model to the groups,
// the first of them (or that of every route, without Groups) the default.
// Every group shares one Cooldowns (Config.Fallback.Cooldowns, or a
// memory store of the stack's own), so a route cooled down in one group
// is skipped in all.
func (s *Stack) groups(cfg Config, routes []portico.Route, est portico.Estimator) (portico.Model, error) {
	d := &dispatch{aliases: cfg.Aliases}
	var err error
	if len(cfg.Groups) == 0 {
		d.def, err = s.kind(cfg, cfg.Kind, routes, est, "")
	} else {
		d.def, d.groups, err = s.namedGroups(cfg, routes, est)
	}
	if err == nil {
		err = checkAliases(cfg.Aliases, d.groups)
	}
	switch {
	case err != nil:
		return nil, err
	case len(d.groups)+len(d.aliases) == 0:
		return d.def, nil
	}
	return d, nil
}

// namedGroups builds each of Config.Groups, by name, and returns the
// first, the default, and all of them; every route must be in one, and
// Config.Kind set with Groups is an error.
func (s *Stack) namedGroups(cfg Config, routes []portico.Route, est portico.Estimator) (portico.Model, map[string]portico.Model, error) {
	if cfg.Kind != nil {
		return nil, nil, errors.New("stack: Config.Kind is set with Config.Groups: set each Group's Kind")
	}
	gs := make(map[string]portico.Model, len(cfg.Groups))
	for gi, g := range cfg.Groups {
		if g.Name == "" || gs[g.Name] != nil {
			return nil, nil, fmt.Errorf("stack: group %d needs a Name of its own (%q)", gi, g.Name)
		}
		rs, err := groupRoutes(g, routes)
		if err != nil {
			return nil, nil, err
		}
		if gs[g.Name], err = s.kind(cfg, g.Kind, rs, est, g.Name); err != nil {
			return nil, nil, err
		}
	}
	return gs[cfg.Groups[0].Name], gs, inSome(routes, cfg.Groups)
}

// inSome reports the first of routes that none of groups names.
func inSome(routes []portico.Route, groups []Group) error {
	for _, r := range routes {
		if !slices.ContainsFunc(groups, func(g Group) bool { return slices.Contains(g.Routes, r.Name) }) {
			return fmt.Errorf("stack: route %q is in no group", r.Name)
		}
	}
	return nil
}

// groupRoutes returns g's routes, found by name in routes; a group
// without routes, or naming one not in routes or twice, is an error.
func groupRoutes(g Group, routes []portico.Route) ([]portico.Route, error) {
	if len(g.Routes) == 0 {
		return nil, fmt.Errorf("stack: group %q has no routes", g.Name)
	}
	rs := make([]portico.Route, 0, len(g.Routes))
	for j, name := range g.Routes {
		i := slices.IndexFunc(routes, func(r portico.Route) bool { return r.Name == name })
		if i < 0 || slices.Contains(g.Routes[:j], name) {
			return nil, fmt.Errorf("stack: group %q: route %q is not in Config.Routes, or listed twice", g.Name, name)
		}
		rs = append(rs, routes[i])
	}
	return rs, nil
}

// checkAliases reports an alias that is empty, has an empty target, is a
// group's name or names another alias.
func checkAliases(aliases map[string]string, groups map[string]portico.Model) error {
	for alias, target := range aliases {
		if alias == "" || target == "" || groups[alias] != nil {
			return fmt.Errorf("stack: alias %q -> %q: an alias and its target are non-empty, and no alias is a group's Name", alias, target)
		}
		if _, ok := aliases[target]; ok {
			return fmt.Errorf("stack: alias %q -> %q names another alias", alias, target)
		}
	}
	return nil
}

// kind builds the group of routes that k chooses among (nil: the
// fallback group in order); name is the group's, for errors.
func (s *Stack) kind(cfg Config, k Kind, routes []portico.Route, est portico.Estimator, name string) (portico.Model, error) {
	if k == nil {
		return s.group(cfg, append([]portico.Route(nil), routes...), est)
	}
	b := &builder{s: s, cfg: cfg, routes: append([]portico.Route(nil), routes...), est: est}
	m, err := k.build(b)
	if err = errors.Join(b.err, err); err != nil {
		if name != "" {
			return nil, &groupError{name: name, err: err}
		}
		if strings.HasPrefix(err.Error(), "stack:") {
			return nil, err
		}
		return nil, fmt.Errorf("stack: %w", err)
	}
	return m, nil
}

// groupError is New's error for a group's: it names the group.
type groupError struct {
	name string
	err  error
}

func (e *groupError) Error() string {
	return "stack: group " + strconv.Quote(e.name) + ": " + strings.TrimPrefix(e.err.Error(), "stack: ")
}

func (e *groupError) Unwrap() error { return e.err }
