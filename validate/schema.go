package validate

import (
	"bytes"
	"cmp"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/portico-llm/portico"
)

// ErrSchema is wrapped by the error a request with a schema that does not
// compile gets: the request's Schema.JSON or one of its tools' Parameters is
// not a valid JSON Schema under any draft it may be read as (see Schemas in
// the package documentation). It is the request's fault: the *portico.Error
// carrying it is Permanent, and the model is not called.
var ErrSchema = errors.New("validate: invalid JSON Schema")

// schemaURL is the location compiled schemas are registered under. Each schema
// gets its own Compiler, so one name serves all.
const schemaURL = "urn:portico:schema"

// cache holds compiled schemas keyed by their JSON text, so a schema is
// compiled once however many requests carry it. A failed compilation is cached
// too. Reads take no lock: the map is immutable once published, and a miss
// publishes a copy with the new entry (copy-on-write, at most CacheSize
// entries copied, once per distinct schema). When full, an arbitrary entry is
// evicted (Go's map order), which keeps the bound without bookkeeping on the
// hot path.
type cache struct {
	m      atomic.Pointer[map[string]*compiled]
	mu     sync.Mutex // serializes writers
	max    int
	format bool
}

type compiled struct {
	schema *jsonschema.Schema
	err    error // a *portico.Error wrapping ErrSchema
}

func newCache(max int, assertFormat bool) *cache {
	c := &cache{max: max, format: assertFormat}
	m := make(map[string]*compiled)
	c.m.Store(&m)
	return c
}

// get returns the compiled form of the schema text raw, compiling it on a miss.
// A hit takes no lock and does not allocate: the map index converts raw
// without copying.
func (c *cache) get(raw []byte) *compiled {
	if e := (*c.m.Load())[string(raw)]; e != nil {
		return e
	}
	e := c.compile(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if won := old[string(raw)]; won != nil {
		return won // a concurrent compile won; keep one.
	}
	m := withEntry(old, string(raw), e, c.max)
	c.m.Store(&m)
	return e
}

// withEntry returns a copy of old with e under key, holding at most max
// entries: those of old past max-1 are evicted, an arbitrary choice in map
// order.
func withEntry(old map[string]*compiled, key string, e *compiled, max int) map[string]*compiled {
	m := make(map[string]*compiled, min(len(old)+1, max))
	for k, v := range old {
		if len(m) >= max-1 {
			break
		}
		m[k] = v
	}
	m[key] = e
	return m
}

func (c *cache) compile(raw []byte) *compiled {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return schemaError(err)
	}
	var first error
	for _, d := range draftsOf(doc) {
		s, err := c.compileAs(doc, d)
		if err == nil {
			return &compiled{schema: s}
		}
		first = cmp.Or(first, err)
	}
	return schemaError(first)
}

// draftsOf returns the drafts to try reading doc as, in turn: the first
// of readAs (its "$schema" says otherwise where it has one), or each of
// readAs when it has none.
func draftsOf(doc any) []*jsonschema.Draft {
	if m, ok := doc.(map[string]any); ok && m["$schema"] == nil {
		return readAs
	}
	return readAs[:1]
}

// schemaError is the compiled form of a schema that does not compile for
// err: a Permanent *portico.Error wrapping ErrSchema and err.
func schemaError(err error) *compiled {
	return &compiled{err: &portico.Error{
		Class:  portico.Permanent,
		Reason: "invalid JSON Schema",
		Err:    portico.Join(ErrSchema, err),
	}}
}

// readAs are the drafts a schema without "$schema" is read as, in order:
// draft 2020-12, then, for one that is not a valid 2020-12 schema (written
// for an earlier draft: "items" as an array, a boolean
// "exclusiveMinimum"), the newest earlier draft it is valid under.
var readAs = []*jsonschema.Draft{
	jsonschema.Draft2020, jsonschema.Draft2019, jsonschema.Draft7, jsonschema.Draft6, jsonschema.Draft4,
}

// compileAs compiles doc, reading it as draft d unless its "$schema" says
// otherwise. Unless the cache asserts formats, "format" is then an
// annotation in every draft: drafts 4 to 7 leave its assertion to the
// implementation, 2019-09 and 2020-12 assert it only under a metaschema
// whose $vocabulary requires it, which the library honours.
func (c *cache) compileAs(doc any, d *jsonschema.Draft) (*jsonschema.Schema, error) {
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(d)
	comp.UseLoader(noLoader{})
	comp.UseRegexpEngine(ecmaRegexp)
	if c.format {
		comp.AssertFormat()
	}
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := comp.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	if !c.format {
		annotateFormats(s, map[*jsonschema.Schema]bool{})
	}
	return s, nil
}

// annotateFormats removes the format assertions the library makes in
// schemas of drafts 4 to 7 (it asserts format there always), in s and
// every schema it reaches.
func annotateFormats(s *jsonschema.Schema, seen map[*jsonschema.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.DraftVersion < 2019 {
		s.Format = nil
	}
	for _, sub := range subschemas(s) {
		annotateFormats(sub, seen)
	}
}

// subschemas returns the schemas s holds, nil ones included.
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	subs := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
		s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	if s.DynamicRef != nil {
		subs = append(subs, s.DynamicRef.Ref)
	}
	subs = slices.Concat(subs, s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems, slices.Collect(maps.Values(s.Properties)),
		slices.Collect(maps.Values(s.PatternProperties)), slices.Collect(maps.Values(s.DependentSchemas)))
	for _, x := range append(slices.Collect(maps.Values(s.Dependencies)), s.AdditionalProperties, s.Items, s.AdditionalItems) {
		subs = appendSchemas(subs, x)
	}
	return subs
}

// appendSchemas appends v to subs when it is a schema or a list of them.
func appendSchemas(subs []*jsonschema.Schema, v any) []*jsonschema.Schema {
	switch x := v.(type) {
	case *jsonschema.Schema:
		return append(subs, x)
	case []*jsonschema.Schema:
		return append(subs, x...)
	}
	return subs
}

// noLoader refuses every external reference: a schema from a request must not
// make the validator read files or fetch URLs.
type noLoader struct{}

var errNoLoad = errors.New("validate: external $ref not allowed")

func (noLoader) Load(string) (any, error) { return nil, errNoLoad }

var printer = message.NewPrinter(language.English)

// collect flattens a jsonschema validation error into violations, appending to
// out. Branching keywords (anyOf, oneOf, not) give one violation at their own
// location rather than every branch's failures.
func (p *pipeline) collect(e *jsonschema.ValidationError) {
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		p.perProperty(e, k.Missing, "missing property")
	case *kind.AdditionalProperties:
		p.perProperty(e, k.Properties, "property not allowed")
	case *kind.AnyOf, *kind.OneOf, *kind.Not:
		p.add(p.schemaViolation(e))
	default:
		if len(e.Causes) == 0 {
			p.add(p.schemaViolation(e))
		}
		for _, c := range e.Causes {
			p.collect(c)
		}
	}
}

// perProperty adds a violation of e with detail for each property of names.
func (p *pipeline) perProperty(e *jsonschema.ValidationError, names []string, detail string) {
	for _, name := range names {
		v := p.schemaViolation(e)
		v.Pointer = under(Pointer(e.InstanceLocation...), name)
		v.Detail = detail
		p.add(v)
	}
}

func (p *pipeline) schemaViolation(e *jsonschema.ValidationError) Violation {
	kw := e.ErrorKind.KeywordPath()
	v := Violation{
		Stage:   p.stage,
		Call:    p.call,
		Pointer: Pointer(e.InstanceLocation...),
		Rule:    schemaRule(e, kw),
		Schema:  schemaPointer(e.SchemaURL, kw),
	}
	if t, ok := e.ErrorKind.(*kind.Type); ok {
		// Type names only: "want number, got string".
		v.Detail = "want " + strings.Join(t.Want, " or ") + ", got " + t.Got
	}
	if p.v.cfg.IncludeValues {
		v.Value = e.ErrorKind.LocalizedString(printer)
	}
	return v
}

// schemaRule is the rule of the violation e of the keyword path kw: the
// path, else "false" for a false subschema (nothing is allowed there),
// else "schema".
func schemaRule(e *jsonschema.ValidationError, kw []string) string {
	if r := strings.Join(kw, "/"); r != "" {
		return r
	}
	if _, ok := e.ErrorKind.(*kind.FalseSchema); ok {
		return "false"
	}
	return "schema"
}

// schemaPointer returns the fragment of the absolute schema location url
// joined with the keyword path: "/properties/total/minimum".
func schemaPointer(url string, kw []string) string {
	_, frag, _ := strings.Cut(url, "#")
	return under(frag, kw...)
}
