package validate

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/portico-llm/portico"
)

// pipeline is one run of the stages over one answer.
type pipeline struct {
	v       *Validator
	out     []Violation
	omitted int
	stage   Stage
	call    int
	norms   []norm // arguments to hand on as the object's text
}

func (p *pipeline) add(v Violation) {
	if len(p.out) >= MaxViolations {
		p.omitted++
		return
	}
	v.Stage = p.stage
	if !p.v.cfg.IncludeValues {
		v.Value = ""
	}
	p.out = append(p.out, v)
}

// reject returns the InvalidResponse error for the violations found in resp.
// Its Usage is a copy of resp.Usage (nil without a Response): the answer was
// billed although it is refused, and routing layers add its cost to the
// Response.Cost of the answer they return.
func (p *pipeline) reject(req *portico.Request, resp *portico.Response) error {
	class, reason := p.class(req, resp)
	r := &rejected{e: portico.Error{
		Class:  class,
		Reason: reason,
		Err:    &Rejection{Violations: p.out, Omitted: p.omitted, Response: resp},
	}}
	if resp != nil {
		r.e.Model = resp.Model
		r.usage = resp.Usage
		r.e.Usage = &r.usage
		if class != portico.InvalidResponse {
			r.e.Status = http.StatusOK // answered and billed: a limiter refunds nothing it does not know of
		}
	}
	return &r.e
}

// class is the class and reason of a rejection with violations p.out: whose
// doing the refused answer is. A provider's content filter is the request's
// on that route (Incompatible: another provider's policy may answer it, no
// retry, no breaker count); a truncation at the request's own
// MaxOutputTokens is the request's on every route (Permanent: the caller
// must ask for more), one at a lower limit of the route's (the output
// stopped short of MaxOutputTokens, or the request set none) or whose output
// was not reported is taken for the route's limit (Incompatible: no route
// is stopped on a guess); anything else is the answer's (InvalidResponse, a
// route fault).
func (p *pipeline) class(req *portico.Request, resp *portico.Response) (portico.Class, string) {
	switch {
	case p.found(RuleContentFilter):
		return portico.Incompatible, "validation rejected: content filtered"
	case !p.found(RuleTruncated):
		return portico.InvalidResponse, "validation rejected"
	case req.MaxOutputTokens > 0 && resp.Usage.OutputTokens >= req.MaxOutputTokens:
		return portico.Permanent, "validation rejected: cut at the request's MaxOutputTokens"
	}
	return portico.Incompatible, "validation rejected: cut at the route's output limit"
}

// found reports whether p found a violation of rule.
func (p *pipeline) found(rule string) bool {
	return slices.ContainsFunc(p.out, func(v Violation) bool { return v.Rule == rule })
}

// rejected holds a rejection's error and the copy of the billed usage it
// points to, in one allocation.
type rejected struct {
	e     portico.Error
	usage portico.Usage
}

// run runs the stages; sch is req.Schema compiled (nil without a Schema).
func (p *pipeline) run(req *portico.Request, resp *portico.Response, sch *compiled) {
	p.stage = StageEnvelope
	if resp == nil {
		p.add(Violation{Rule: RuleNilResponse})
		return
	}
	if req.Embedding != nil {
		p.embeddings(req, resp)
		return
	}
	p.answer(req, resp, sch)
}

// answer runs the stages after the first over resp, the answer to a
// generation request: its envelope, finish, schema, checks and tool calls.
func (p *pipeline) answer(req *portico.Request, resp *portico.Response, sch *compiled) {
	cfg := &p.v.cfg
	text := resp.Text
	if cfg.TrimSpace {
		text = trimSpace(text)
	}
	p.envelope(resp, text)
	p.finish(req, resp)
	value, decoded := p.structured(req, text, sch)

	// Typed checks. The Answer escapes into user funcs, so it is only
	// built when there are checks to run.
	var ans *Answer
	if decoded && len(cfg.Checks)+len(cfg.Semantic) > 0 {
		ans = &Answer{Request: req, Response: resp, Text: text, Value: value}
		p.stage = StageTyped
		p.runChecks(cfg.Checks, ans)
	}
	p.tools(req, resp)
	if ans != nil {
		p.stage = StageSemantic
		p.runChecks(cfg.Semantic, ans)
	}
}

// structured is the schema stage: text decoded once, when the request has a
// Schema or a check needs the value, and validated against sch.
func (p *pipeline) structured(req *portico.Request, text string, sch *compiled) (value any, decoded bool) {
	p.stage = StageSchema
	if req.Schema == nil && !p.v.decode {
		return nil, false
	}
	value, decoded = p.decode(text)
	if decoded && sch != nil {
		p.validate(sch, value)
	}
	return value, decoded
}

// tools is the tool stage: each of resp's tool calls checked.
func (p *pipeline) tools(req *portico.Request, resp *portico.Response) {
	p.stage = StageTools
	for i := range resp.ToolCalls {
		p.call = i
		p.toolCall(req, &resp.ToolCalls[i])
	}
	p.call = 0
}

// embeddings checks the answer of an embedding request: one vector per
// input, none empty, each of the Dimensions asked for (when asked), and
// all of one length (one space).
func (p *pipeline) embeddings(req *portico.Request, resp *portico.Response) {
	vs := resp.Embeddings
	if len(vs) != len(req.Messages) || len(vs) > 0 && !allOfLength(vs, cmp.Or(req.Embedding.Dimensions, len(vs[0]))) {
		p.add(Violation{Rule: RuleEmbeddings})
	}
}

// allOfLength reports whether every vector of vs holds n > 0 numbers.
func allOfLength(vs [][]float32, n int) bool {
	return n > 0 && !slices.ContainsFunc(vs, func(v []float32) bool { return len(v) != n })
}

// envelope checks that an answer without tool calls has text (unless
// AllowEmptyText) and does not claim to end in tool calls.
func (p *pipeline) envelope(resp *portico.Response, text string) {
	if len(resp.ToolCalls) > 0 {
		return
	}
	if !p.v.cfg.AllowEmptyText && strings.Trim(text, jsonSpace) == "" {
		p.add(Violation{Rule: RuleEmptyText})
	}
	if resp.FinishReason == portico.FinishToolCalls {
		p.add(Violation{Rule: RuleToolCallsAbsent})
	}
}

// finish checks the finish reason: present if RequireFinish, no content
// filter, and no truncation where Length refuses one.
func (p *pipeline) finish(req *portico.Request, resp *portico.Response) {
	cfg := &p.v.cfg
	p.stage = StageFinish
	switch r := resp.FinishReason; {
	case r == "" && cfg.RequireFinish:
		p.add(Violation{Rule: RuleFinishMissing})
	case r == portico.FinishContentFilter:
		p.add(Violation{Rule: RuleContentFilter})
	case r == portico.FinishLength && cfg.Length.rejects(req, resp):
		p.add(Violation{Rule: RuleTruncated})
	}
}

// rejects reports whether the policy rejects resp, the answer to req, when
// it is cut by the token limit: always, never, or where the full output is
// needed (a Schema or tools asked for, or tool calls answered).
func (p LengthPolicy) rejects(req *portico.Request, resp *portico.Response) bool {
	structured := req.Schema != nil || len(req.Tools) > 0 || len(resp.ToolCalls) > 0
	return p == LengthReject || p == LengthRejectStructured && structured
}

func (p *pipeline) runChecks(checks []Check, a *Answer) {
	for _, c := range checks {
		for _, v := range c(a) {
			v.Call = 0
			p.add(v)
		}
	}
}

func (p *pipeline) validate(c *compiled, value any) {
	if c.schema == nil {
		return // Prepare reported it.
	}
	err := c.schema.Validate(value)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		// The library walks objects in map order: sort this schema's
		// violations by pointer so that rejections are deterministic.
		start := len(p.out)
		p.collect(ve)
		slices.SortStableFunc(p.out[start:], func(a, b Violation) int {
			return strings.Compare(a.Pointer, b.Pointer)
		})
		return
	}
	p.add(Violation{Call: p.call, Rule: "schema"})
}

// decode checks text against the limits and decodes it as exactly one JSON
// value, numbers as json.Number, reporting a violation when it cannot.
func (p *pipeline) decode(text string) (any, bool) {
	if rule, detail := p.v.lim.scan(text); rule != "" {
		p.add(Violation{Call: p.call, Rule: rule, Detail: detail})
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		p.add(Violation{Call: p.call, Rule: RuleJSON, Detail: jsonErrorDetail(err)})
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		p.add(Violation{Call: p.call, Rule: RuleJSON, Detail: "trailing data at offset " + strconv.FormatInt(dec.InputOffset(), 10)})
		return nil, false
	}
	return v, true
}

// jsonErrorDetail says, content-free, why text did not decode with err.
func jsonErrorDetail(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return "syntax error at offset " + strconv.FormatInt(se.Offset, 10)
	case err == io.EOF:
		return "no JSON value"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of JSON"
	}
	return "invalid JSON"
}

func (p *pipeline) toolCall(req *portico.Request, tc *portico.ToolCall) {
	params := p.toolParams(req, tc.Name)
	value, text, ok := p.arguments(tc.Arguments)
	if text != nil {
		p.norms = append(p.norms, norm{call: p.call, text: text})
	}
	if ok && len(params) > 0 {
		p.validate(p.v.cache.get(params), value)
	}
}

// toolParams returns the Parameters of the tool of req named name, nil when
// it has none; when req declares no such tool, it reports the violation.
func (p *pipeline) toolParams(req *portico.Request, name string) json.RawMessage {
	i := slices.IndexFunc(req.Tools, func(t portico.Tool) bool { return t.Name == name })
	if i < 0 {
		p.add(Violation{Call: p.call, Rule: RuleToolName})
		return nil
	}
	return req.Tools[i].Parameters
}

// trimSpace trims the white space JSON allows around a value (space, tab,
// line feed, carriage return), plus the rest of Unicode's white space.
func trimSpace(s string) string { return strings.TrimSpace(s) }
