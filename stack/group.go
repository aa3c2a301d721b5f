package stack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/fallback"
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
	if len(cfg.Groups) == 0 && len(cfg.Aliases) == 0 {
		return s.kind(cfg, cfg.Kind, routes, est, "")
	}
	if cfg.Fallback.Cooldowns == nil {
		cfg.Fallback.Cooldowns, _ = fallback.NewMemoryCooldowns(0)
	}
	d, err := s.newDispatch(cfg, routes, est)
	if err != nil {
		return nil, err
	}
	if err := s.addGroups(d, cfg, routes, est); err != nil {
		return nil, err
	}
	if err := checkAliases(cfg.Aliases, d.groups); err != nil {
		return nil, err
	}
	return d, nil
}

// addGroups builds each of Config.Groups into d, the first its default;
// with Groups, every route must be in one.
func (s *Stack) addGroups(d *dispatch, cfg Config, routes []portico.Route, est portico.Estimator) error {
	index := make(map[string]int, len(routes))
	for i, r := range routes {
		index[r.Name] = i
	}
	used := make([]bool, len(routes))
	for gi, g := range cfg.Groups {
		if g.Name == "" || d.groups[g.Name] != nil {
			return fmt.Errorf("stack: group %d needs a Name of its own (%q)", gi, g.Name)
		}
		rs, err := groupRoutes(g, routes, index, used)
		if err != nil {
			return err
		}
		m, err := s.kind(cfg, g.Kind, rs, est, g.Name)
		if err != nil {
			return err
		}
		d.groups[g.Name] = m
		if gi == 0 {
			d.def = m
		}
	}
	if len(cfg.Groups) > 0 {
		if err := checkUsed(routes, used); err != nil {
			return err
		}
	}
	return nil
}

// newDispatch returns groups' dispatch before its groups are added: with
// the group of every route (Config.Kind) its default when there are no
// Config.Groups; Config.Kind set with Groups is an error.
func (s *Stack) newDispatch(cfg Config, routes []portico.Route, est portico.Estimator) (*dispatch, error) {
	d := &dispatch{groups: make(map[string]portico.Model, len(cfg.Groups)), aliases: cfg.Aliases}
	if len(cfg.Groups) == 0 {
		var err error
		if d.def, err = s.kind(cfg, cfg.Kind, routes, est, ""); err != nil {
			return nil, err
		}
	} else if cfg.Kind != nil {
		return nil, errors.New("stack: Config.Kind is set with Config.Groups: set each Group's Kind")
	}
	return d, nil
}

// checkUsed reports the first of routes that no group used.
func checkUsed(routes []portico.Route, used []bool) error {
	for i, u := range used {
		if !u {
			return fmt.Errorf("stack: route %q is in no group", routes[i].Name)
		}
	}
	return nil
}

// groupRoutes returns g's routes, found by name in routes (index maps a
// name to its position there), and marks each one used; a group without
// routes, or naming one not in routes or twice, is an error.
func groupRoutes(g Group, routes []portico.Route, index map[string]int, used []bool) ([]portico.Route, error) {
	if len(g.Routes) == 0 {
		return nil, fmt.Errorf("stack: group %q has no routes", g.Name)
	}
	rs := make([]portico.Route, 0, len(g.Routes))
	seen := make(map[string]bool, len(g.Routes))
	for _, name := range g.Routes {
		i, ok := index[name]
		if !ok || seen[name] {
			return nil, fmt.Errorf("stack: group %q: route %q is not in Config.Routes, or listed twice", g.Name, name)
		}
		seen[name], used[i] = true, true
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
