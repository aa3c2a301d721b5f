package validate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/portico-llm/portico"
)

// rejection returns the *Rejection inside err, failing the test when err is
// not an InvalidResponse rejection.
func rejection(t *testing.T, err error) *Rejection {
	t.Helper()
	if err == nil {
		t.Fatal("err = nil, want a rejection")
	}
	if c := portico.ClassOf(err); c != portico.InvalidResponse && c != portico.Incompatible && c != portico.Permanent {
		t.Fatalf("ClassOf(err) = %v, want a rejection's class (err: %v)", c, err)
	}
	var r *Rejection
	if !errors.As(err, &r) {
		t.Fatalf("errors.As(err, *Rejection) = false for %v", err)
	}
	return r
}

// violationRules returns "stage/rule@pointer" for each violation, in order.
func violationRules(r *Rejection) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Stage.String()+"/"+v.Rule+"@"+v.Pointer)
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func answer(text string) *portico.Response {
	return &portico.Response{Text: text, FinishReason: portico.FinishStop, Model: "m"}
}

const personSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["name", "age", "role"],
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0},
    "role": {"enum": ["admin", "user"]},
    "tags": {"type": "array", "items": {"type": "string"}}
  }
}`

func schemaReq(schema string) *portico.Request {
	return &portico.Request{Schema: &portico.Schema{Name: "s", JSON: []byte(schema)}}
}

func TestEnvelopeAndFinish(t *testing.T) {
	toolReq := &portico.Request{Tools: []portico.Tool{{Name: "f"}}}
	call := []portico.ToolCall{{ID: "1", Name: "f", Arguments: []byte(`{}`)}}
	tests := []struct {
		name string
		cfg  Config
		req  *portico.Request
		resp *portico.Response
		want []string // nil: accepted
	}{
		{"nil response", Config{}, &portico.Request{}, nil, []string{"envelope/nil_response@"}},
		{"plain text", Config{}, &portico.Request{}, answer("hello"), nil},
		{"empty text", Config{}, &portico.Request{}, answer(" \n"), []string{"envelope/empty_text@"}},
		{"empty text allowed", Config{AllowEmptyText: true}, &portico.Request{}, answer(""), nil},
		{"tool_calls without calls", Config{}, &portico.Request{}, &portico.Response{Text: "x", FinishReason: portico.FinishToolCalls}, []string{"envelope/tool_calls_absent@"}},
		{"tool call, no text", Config{}, toolReq, &portico.Response{ToolCalls: call, FinishReason: portico.FinishToolCalls}, nil},
		{"no finish reason", Config{}, &portico.Request{}, &portico.Response{Text: "x"}, nil},
		{"no finish reason required", Config{RequireFinish: true}, &portico.Request{}, &portico.Response{Text: "x"}, []string{"finish/finish_missing@"}},
		{"content filter", Config{Length: LengthAccept}, &portico.Request{}, &portico.Response{Text: "x", FinishReason: portico.FinishContentFilter}, []string{"finish/content_filter@"}},
		{"plain text truncated", Config{}, &portico.Request{}, &portico.Response{Text: "x", FinishReason: portico.FinishLength}, nil},
		{"plain text truncated, LengthReject", Config{Length: LengthReject}, &portico.Request{}, &portico.Response{Text: "x", FinishReason: portico.FinishLength}, []string{"finish/truncated@"}},
		{"tools truncated", Config{}, toolReq, &portico.Response{Text: "x", FinishReason: portico.FinishLength}, []string{"finish/truncated@"}},
		{"schema truncated", Config{}, schemaReq(`{}`), &portico.Response{Text: `{"a":1}`, FinishReason: portico.FinishLength}, []string{"finish/truncated@"}},
		{"schema truncated, LengthAccept", Config{Length: LengthAccept}, schemaReq(`{}`), &portico.Response{Text: `{"a":1}`, FinishReason: portico.FinishLength}, nil},
		{"schema truncated JSON, LengthAccept", Config{Length: LengthAccept}, schemaReq(`{}`), &portico.Response{Text: `{"a":`, FinishReason: portico.FinishLength}, []string{"schema/json@"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := MustNew(tt.cfg)
			err := v.Check(tt.req, tt.resp)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if got := violationRules(rejection(t, err)); !equal(got, tt.want) {
				t.Fatalf("violations = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRejectionClass: whose doing a refused answer is decides its class. A
// content filter is the request's on that route (Incompatible), a cut at the
// request's own MaxOutputTokens the request's everywhere (Permanent), a cut
// short of it or without one the route's limit (Incompatible); only what is
// wrong with the answer itself is InvalidResponse, a route fault. The ones
// that are not InvalidResponse carry Status 200 and the billed usage.
func TestRejectionClass(t *testing.T) {
	v := MustNew(Config{Length: LengthReject})
	used := func(n int) portico.Usage { return portico.Usage{InputTokens: 5, OutputTokens: n} }
	for _, c := range []struct {
		name   string
		max    int
		resp   *portico.Response
		class  portico.Class
		reason string
	}{
		{"bad answer", 0, answer(" "), portico.InvalidResponse, "validation rejected"},
		{"content filter", 0, &portico.Response{Text: "x", FinishReason: portico.FinishContentFilter, Usage: used(1)}, portico.Incompatible, "validation rejected: content filtered"},
		{"content filter, empty", 0, &portico.Response{FinishReason: portico.FinishContentFilter}, portico.Incompatible, "validation rejected: content filtered"},
		{"cut at the request's limit", 3, &portico.Response{Text: "x", FinishReason: portico.FinishLength, Usage: used(3)}, portico.Permanent, "validation rejected: cut at the request's MaxOutputTokens"},
		{"cut, usage unknown", 3, &portico.Response{Text: "x", FinishReason: portico.FinishLength}, portico.Incompatible, "validation rejected: cut at the route's output limit"},
		{"cut short of the request's limit", 300, &portico.Response{Text: "x", FinishReason: portico.FinishLength, Usage: used(128)}, portico.Incompatible, "validation rejected: cut at the route's output limit"},
		{"cut without a limit", 0, &portico.Response{Text: "x", FinishReason: portico.FinishLength, Usage: used(128)}, portico.Incompatible, "validation rejected: cut at the route's output limit"},
	} {
		err := v.Check(&portico.Request{MaxOutputTokens: c.max}, c.resp)
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != c.class || pe.Reason != c.reason {
			t.Errorf("%s: Check = %v, want %v %q", c.name, err, c.class, c.reason)
			continue
		}
		if wantStatus := map[bool]int{true: 0, false: 200}[c.class == portico.InvalidResponse]; pe.Status != wantStatus || pe.Usage == nil || *pe.Usage != c.resp.Usage {
			t.Errorf("%s: Status %d, Usage %v; want %d and the answer's usage", c.name, pe.Status, pe.Usage, wantStatus)
		}
		// Each of these is the envelope's or the finish's: the route's
		// doing, not what the request asked of the answer.
		if errors.Is(err, portico.ErrAnswerRefused) {
			t.Errorf("%s: Check = %v matches portico.ErrAnswerRefused, which breakers do not count", c.name, err)
		}
	}
}

func TestSchemaViolationsListEveryOneWithoutValues(t *testing.T) {
	v := MustNew(Config{})
	const secret = "Mario-Rossi-SSN-123"
	text := `{"name": 42, "age": -3, "role": "` + secret + `", "tags": ["a", 7], "extra": "` + secret + `"}`
	err := v.Check(schemaReq(personSchema), answer(text))
	r := rejection(t, err)
	if !errors.Is(err, portico.ErrAnswerRefused) {
		t.Errorf("schema violations: Check = %v, which does not match portico.ErrAnswerRefused (breakers would count what one request asked)", err)
	}
	if err := v.Check(schemaReq(personSchema), answer("")); errors.Is(err, portico.ErrAnswerRefused) {
		t.Errorf("blank answer to a schema: Check = %v matches portico.ErrAnswerRefused, want it counted as the route's", err)
	}
	want := map[string]bool{
		"schema/type@/name":                  true,
		"schema/minimum@/age":                true,
		"schema/enum@/role":                  true,
		"schema/type@/tags/1":                true,
		"schema/additionalProperties@/extra": true,
	}
	got := violationRules(r)
	if len(got) != len(want) {
		t.Fatalf("violations = %q, want the %d of %v", got, len(want), want)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected violation %q; all: %q", g, got)
		}
	}
	for _, vi := range r.Violations {
		if vi.Value != "" {
			t.Errorf("violation %v has Value %q, want none without IncludeValues", vi, vi.Value)
		}
		switch vi.Pointer {
		case "/name":
			if vi.Detail != "want string, got number" || vi.Schema != "/properties/name/type" {
				t.Errorf("name violation = %+v, want Detail %q Schema %q", vi, "want string, got number", "/properties/name/type")
			}
		case "/age":
			if vi.Schema != "/properties/age/minimum" {
				t.Errorf("age violation Schema = %q, want /properties/age/minimum", vi.Schema)
			}
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("err.Error() = %q quotes the answer", err.Error())
	}
	if r.Response == nil || r.Response.Text != text {
		t.Errorf("Rejection.Response does not carry the rejected answer")
	}

	// Opting in reports values.
	v = MustNew(Config{IncludeValues: true})
	r = rejection(t, v.Check(schemaReq(personSchema), answer(text)))
	if !r.Has("enum", "/role") {
		t.Fatalf("violations = %q, want enum at /role", violationRules(r))
	}
	for _, vi := range r.Violations {
		if vi.Value == "" {
			t.Errorf("violation %v has no Value with IncludeValues", vi)
		}
	}
}

func TestMissingRequiredPointsAtEachProperty(t *testing.T) {
	v := MustNew(Config{})
	r := rejection(t, v.Check(schemaReq(personSchema), answer(`{"name":"x"}`)))
	want := []string{"schema/required@/age", "schema/required@/role"}
	if got := violationRules(r); !equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
}

func TestInvalidJSON(t *testing.T) {
	v := MustNew(Config{})
	for _, text := range []string{
		"not json",
		`{"name": "x"`,
		`{"name":"x","age":1,"role":"user"} {}`,
		"```json\n{\"name\":\"x\",\"age\":1,\"role\":\"user\"}\n```",
		"",
	} {
		r := rejection(t, v.Check(schemaReq(personSchema), &portico.Response{Text: text, ToolCalls: nil}))
		if !r.Has(RuleJSON, "") {
			t.Errorf("Check(%q) violations = %q, want schema/json", text, violationRules(r))
		}
	}
	// White space around a JSON value is valid JSON: accepted untouched.
	resp := answer("\n  {\"name\":\"x\",\"age\":1,\"role\":\"user\"}  \n")
	if err := v.Check(schemaReq(personSchema), resp); err != nil {
		t.Fatalf("Check(spaced JSON) = %v, want nil", err)
	}
}

func TestLimitsRejectBeforeDecoding(t *testing.T) {
	v := MustNew(Config{Limits: Limits{MaxBytes: 1 << 20}})
	tests := []struct {
		name, text, rule string
	}{
		{"deep arrays", strings.Repeat("[", 500000), RuleMaxDepth},
		{"deep objects", strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65), RuleMaxDepth},
		{"huge exponent", `{"n": 1e1000000}`, RuleMaxNumber},
		{"long number", `{"n": ` + strings.Repeat("9", 65) + `}`, RuleMaxNumber},
		{"too big", `"` + strings.Repeat("x", 1<<20) + `"`, RuleMaxBytes},
	}
	for _, tt := range tests {
		r := rejection(t, v.Check(schemaReq(`{}`), answer(tt.text)))
		if got := violationRules(r); !equal(got, []string{"schema/" + tt.rule + "@"}) {
			t.Errorf("%s: violations = %q, want schema/%s", tt.name, got, tt.rule)
		}
	}
	// At the limits, and brackets inside strings, pass.
	for _, text := range []string{
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
		`{"s": "[[[[{{{{ \" [[[[ \\"}`,
		`{"n": -1.5e-400, "m": ` + strings.Repeat("9", 64) + `}`,
	} {
		if err := v.Check(schemaReq(`{}`), answer(text)); err != nil {
			t.Errorf("Check(%.40q) = %v, want nil", text, err)
		}
	}
}

const weatherParams = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["city", "unit"],
  "properties": {
    "city": {"type": "string"},
    "unit": {"enum": ["C", "F"]}
  }
}`

func TestToolCalls(t *testing.T) {
	req := &portico.Request{Tools: []portico.Tool{
		{Name: "weather", Parameters: []byte(weatherParams)},
		{Name: "now"},
	}}
	v := MustNew(Config{})
	ok := &portico.Response{FinishReason: portico.FinishToolCalls, ToolCalls: []portico.ToolCall{
		{ID: "a", Name: "weather", Arguments: []byte(`{"city":"Torino","unit":"C"}`)},
		{ID: "b", Name: "now", Arguments: []byte(`{}`)},
	}}
	if err := v.Check(req, ok); err != nil {
		t.Fatalf("Check(valid calls) = %v, want nil", err)
	}
	bad := &portico.Response{FinishReason: portico.FinishToolCalls, ToolCalls: []portico.ToolCall{
		{ID: "a", Name: "weather", Arguments: []byte(`{"city":"Torino","unit":"K"}`)},
		{ID: "b", Name: "delete_everything", Arguments: []byte(`{}`)},
		{ID: "c", Name: "now", Arguments: []byte(`{"x":`)},
		{ID: "d", Name: "weather", Arguments: []byte(`{"unit":"F"}`)},
	}}
	r := rejection(t, v.Check(req, bad))
	type key struct {
		call          int
		rule, pointer string
	}
	var got []key
	for _, vi := range r.Violations {
		if vi.Stage != StageTools {
			t.Errorf("violation %v stage = %v, want tools", vi, vi.Stage)
		}
		got = append(got, key{vi.Call, vi.Rule, vi.Pointer})
	}
	want := []key{{0, "enum", "/unit"}, {1, RuleToolName, ""}, {2, RuleJSON, ""}, {3, "required", "/city"}}
	if len(got) != len(want) {
		t.Fatalf("violations = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("violation %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestInvalidSchemaFailsBeforeTheCall(t *testing.T) {
	calls := 0
	m := MustNew(Config{}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		calls++
		return answer("{}"), nil
	}))
	for _, schema := range []string{
		`{"type": "objekt"}`,
		`{"$ref": "file:///etc/passwd"}`,
		`{"type": `,
	} {
		_, err := m.Generate(context.Background(), schemaReq(schema))
		if !errors.Is(err, ErrSchema) || portico.ClassOf(err) != portico.Permanent {
			t.Errorf("Generate(schema %s) = %v, want a permanent ErrSchema", schema, err)
		}
	}
	req := &portico.Request{Tools: []portico.Tool{{Name: "f", Parameters: []byte(`{"minimum": "x"}`)}}}
	if _, err := m.Generate(context.Background(), req); !errors.Is(err, ErrSchema) {
		t.Errorf("Generate(bad tool schema) = %v, want ErrSchema", err)
	}
	if calls != 0 {
		t.Fatalf("model called %d times, want 0", calls)
	}
	// One line, as every portico error reads in a log: the compiler's cause
	// follows the sentinel after "; ", not on a line of its own.
	_, err := m.Generate(context.Background(), schemaReq(`{"type": `))
	if want := "portico: permanent: validate: invalid JSON Schema; unexpected EOF"; err == nil || err.Error() != want {
		t.Errorf("Generate(truncated schema) = %q, want %q", err, want)
	}
}

func TestCacheIsBoundedAndReused(t *testing.T) {
	v := MustNew(Config{CacheSize: 2})
	var first *compiled
	for i := range 5 {
		s := `{"minimum": ` + string(rune('0'+i)) + `}`
		c := v.cache.get([]byte(s))
		if i == 0 {
			first = c
			if again := v.cache.get([]byte(s)); again != c {
				t.Fatalf("cache.get twice returned two compiled schemas")
			}
		}
		if n := len(*v.cache.m.Load()); n > 2 || n != min(i+1, 2) {
			t.Fatalf("after %d schemas the cache holds %d, want <= 2 (%d)", i+1, n, min(i+1, 2))
		}
		if again := v.cache.get([]byte(s)); again != c {
			t.Fatalf("schema %d evicted by its own insertion", i)
		}
	}
	if first.schema == nil {
		t.Fatalf("first schema did not compile: %v", first.err)
	}
}

func TestCacheConcurrentCompilesKeepOne(t *testing.T) {
	v := MustNew(Config{CacheSize: 4})
	schemas := []string{`{"minimum": 1}`, `{"maximum": 2}`, `{"type": "string"}`}
	got := make([][]*compiled, 8)
	var wg sync.WaitGroup
	for g := range got {
		wg.Go(func() {
			for _, s := range schemas {
				got[g] = append(got[g], v.cache.get([]byte(s)))
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i := range schemas {
			if got[g][i] != got[0][i] || got[g][i].schema == nil {
				t.Fatalf("goroutine %d got compiled %p for schema %d, goroutine 0 got %p: want one compiled schema", g, got[g][i], i, got[0][i])
			}
		}
	}
	if n := len(*v.cache.m.Load()); n != len(schemas) {
		t.Fatalf("cache holds %d schemas, want %d", n, len(schemas))
	}
}

// streamer is a Model that streams its answer in two chunks.
func streamer(text string, sawStream *bool) portico.Model {
	return portico.ModelFunc(func(ctx context.Context, req *portico.Request) (*portico.Response, error) {
		*sawStream = req.OnChunk != nil
		if req.OnChunk != nil {
			h := len(text) / 2
			for _, c := range []string{text[:h], text[h:]} {
				if err := req.OnChunk(portico.Chunk{Text: c}); err != nil {
					return nil, err
				}
			}
		}
		return answer(text), nil
	})
}

func TestStreamingBuffersUntilAccepted(t *testing.T) {
	const good = `{"name":"x","age":1,"role":"user"}`
	const bad = `{"name":"x","age":-1,"role":"user"}`
	tests := []struct {
		name        string
		passThrough bool
		text        string
		wantChunks  []string
		wantErr     bool
	}{
		{"buffered accepted", false, good, []string{good}, false},
		{"buffered rejected", false, bad, nil, true},
		{"pass-through accepted", true, good, []string{good[:len(good)/2], good[len(good)/2:]}, false},
		{"pass-through rejected", true, bad, []string{bad[:len(bad)/2], bad[len(bad)/2:]}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inner bool
			m := MustNew(Config{PassThroughChunks: tt.passThrough}).Wrap(streamer(tt.text, &inner))
			var got []string
			onChunk := func(c portico.Chunk) error { got = append(got, c.Text); return nil }
			req := schemaReq(personSchema)
			req.OnChunk = onChunk
			resp, err := m.Generate(context.Background(), req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Generate err = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && resp.Text != tt.text {
				t.Fatalf("resp.Text = %q, want %q", resp.Text, tt.text)
			}
			if !inner {
				t.Errorf("inner model did not stream; inner layers lose TTFT timing")
			}
			if !equal(got, tt.wantChunks) {
				t.Fatalf("caller's chunks = %q, want %q", got, tt.wantChunks)
			}
			if req.OnChunk == nil {
				t.Fatalf("the caller's request was modified")
			}
		})
	}
}

func TestChunkCallbackErrorIsCanceled(t *testing.T) {
	var inner bool
	m := MustNew(Config{}).Wrap(streamer(`{}`, &inner))
	stop := errors.New("caller went away")
	req := schemaReq(`{}`)
	req.OnChunk = func(portico.Chunk) error { return stop }
	_, err := m.Generate(context.Background(), req)
	if !errors.Is(err, stop) || portico.ClassOf(err) != portico.Canceled {
		t.Fatalf("Generate = %v, want a canceled error wrapping the callback's", err)
	}
}

type recorder struct {
	mu     sync.Mutex
	events []portico.Event
}

func (r *recorder) Observe(_ context.Context, e portico.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func TestWrapReportsEventsAndTrims(t *testing.T) {
	rec := &recorder{}
	ctx := portico.ContextWithObserver(context.Background(), rec)
	text := " \n{\"name\":\"x\",\"age\":1,\"role\":\"user\"}\t"
	next := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		r := answer(text)
		r.Route = "primary"
		return r, nil
	})
	resp, err := MustNew(Config{TrimSpace: true}).Wrap(next).Generate(ctx, schemaReq(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(text); resp.Text != want {
		t.Fatalf("resp.Text = %q, want trimmed %q", resp.Text, want)
	}
	_, err = MustNew(Config{}).Wrap(next).Generate(ctx, schemaReq(`{"type":"array"}`))
	rejection(t, err)
	want := []portico.Event{
		{Kind: portico.EventValidation, Route: "primary", Reason: "accepted"},
		{Kind: portico.EventValidation, Route: "primary", Class: portico.InvalidResponse, Reason: "rejected"},
	}
	if len(rec.events) != len(want) || rec.events[0] != want[0] || rec.events[1] != want[1] {
		t.Fatalf("events = %+v, want %+v", rec.events, want)
	}
}

func TestWrapPassesErrorsThrough(t *testing.T) {
	boom := &portico.Error{Class: portico.Transient, Reason: "503"}
	m := MustNew(Config{}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, boom
	}))
	if _, err := m.Generate(context.Background(), schemaReq(`{}`)); err != boom {
		t.Fatalf("Generate = %v, want the inner error unchanged", err)
	}
	// A Model that breaks its contract with (nil, nil) gets a rejection,
	// not a nil Response passed on as success.
	m = MustNew(Config{}).Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return nil, nil
	}))
	resp, err := m.Generate(context.Background(), schemaReq(`{}`))
	if resp != nil {
		t.Fatalf("Generate = %v, want nil Response", resp)
	}
	if got := violationRules(rejection(t, err)); !equal(got, []string{"envelope/nil_response@"}) {
		t.Fatalf("violations = %q, want envelope/nil_response", got)
	}
}

func TestChecksRunInStageOrderAndCannotLeakValues(t *testing.T) {
	var order []string
	check := func(name string) Check {
		return func(a *Answer) []Violation {
			order = append(order, name)
			if a.Value == nil {
				t.Errorf("check %s saw no decoded value", name)
			}
			return []Violation{{Rule: name, Pointer: "/x", Value: "secret", Stage: StageEnvelope, Call: 9}}
		}
	}
	v := MustNew(Config{Checks: []Check{check("typed")}, Semantic: []Check{check("semantic")}})
	req := &portico.Request{Tools: []portico.Tool{{Name: "f"}}}
	resp := &portico.Response{Text: `{"x":1}`, ToolCalls: []portico.ToolCall{{Name: "g", Arguments: []byte(`{}`)}}}
	r := rejection(t, v.Check(req, resp))
	want := []string{"typed/typed@/x", "tools/tool_name@", "semantic/semantic@/x"}
	if got := violationRules(r); !equal(got, want) {
		t.Fatalf("violations = %q, want %q", got, want)
	}
	for _, vi := range r.Violations {
		if vi.Value != "" || (vi.Stage != StageTools && vi.Call != 0) {
			t.Errorf("violation %+v: user Value or Call kept", vi)
		}
	}
	// Checks imply a JSON answer.
	r = rejection(t, v.Check(&portico.Request{}, answer("plain words")))
	if got := violationRules(r); !equal(got, []string{"schema/json@"}) {
		t.Fatalf("violations for plain text = %q, want schema/json only", got)
	}
	if !equal(order, []string{"typed", "semantic"}) {
		t.Fatalf("checks ran %q, want typed then semantic once", order)
	}
}

func TestTypedReportsGoTypeMismatch(t *testing.T) {
	type item struct {
		Qty int `json:"qty"`
	}
	type doc struct {
		Items []item `json:"items"`
	}
	called := false
	v := MustNew(Config{Checks: []Check{Typed(func(doc) []Violation { called = true; return nil })}})
	r := rejection(t, v.Check(&portico.Request{}, answer(`{"items":[{"qty":"many"}]}`)))
	if len(r.Violations) != 1 || r.Violations[0].Rule != RuleGoType || r.Violations[0].Pointer != "/items/0/qty" {
		t.Fatalf("violations = %+v, want one go_type at /items/0/qty", r.Violations)
	}
	if called {
		t.Fatalf("typed func called on an undecodable value")
	}
	if d := r.Violations[0].Detail; d != "want int, got string" {
		t.Fatalf("Detail = %q, want %q", d, "want int, got string")
	}
	// encoding/json names a mismatched number with its value ("number
	// 1.5"); the answer's number must not reach the violation.
	r = rejection(t, v.Check(&portico.Request{}, answer(`{"items":[{"qty":1},{"qty":4242.125}]}`)))
	if len(r.Violations) != 1 || r.Violations[0].Pointer != "/items/1/qty" || r.Violations[0].Detail != "want int, got number" {
		t.Fatalf("violations = %+v, want one go_type at /items/1/qty with Detail %q", r.Violations, "want int, got number")
	}
}

func TestNilRequestIsPermanent(t *testing.T) {
	calls := 0
	v := MustNew(Config{})
	m := v.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		calls++
		return answer("x"), nil
	}))
	resp, err := m.Generate(context.Background(), nil)
	if resp != nil || !errors.Is(err, portico.ErrNilRequest) || portico.ClassOf(err) != portico.Permanent {
		t.Fatalf("Generate(nil request) = %v, %v, want nil and portico.ErrNilRequest", resp, err)
	}
	if calls != 0 {
		t.Fatalf("model called %d times for a nil request, want 0", calls)
	}
	if err := v.Check(nil, answer("x")); !errors.Is(err, portico.ErrNilRequest) {
		t.Fatalf("Check(nil request) = %v, want portico.ErrNilRequest", err)
	}
	if err := v.Prepare(nil); !errors.Is(err, portico.ErrNilRequest) {
		t.Fatalf("Prepare(nil request) = %v, want portico.ErrNilRequest", err)
	}
}

func TestMaxViolations(t *testing.T) {
	v := MustNew(Config{})
	nums := strings.TrimSuffix(strings.Repeat("1,", MaxViolations+7), ",")
	r := rejection(t, v.Check(schemaReq(`{"type":"array","items":{"type":"string"}}`), answer("["+nums+"]")))
	if len(r.Violations) != MaxViolations || r.Omitted != 7 {
		t.Fatalf("len(Violations), Omitted = %d, %d, want %d, 7", len(r.Violations), r.Omitted, MaxViolations)
	}
}

// New refuses each value that can only be a mistake, naming the field.
func TestNewRejectsBadConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Limits: Limits{MaxBytes: -1}}, "validate: Config.Limits.MaxBytes is negative"},
		{Config{Limits: Limits{MaxDepth: -1}}, "validate: Config.Limits.MaxDepth is negative"},
		{Config{Limits: Limits{MaxNumberLength: -1}}, "validate: Config.Limits.MaxNumberLength is negative"},
		{Config{Limits: Limits{MaxExponent: -1}}, "validate: Config.Limits.MaxExponent is negative"},
		{Config{CacheSize: -2}, "validate: Config.CacheSize is negative"},
		{Config{Length: 9}, "validate: Config.Length is not a LengthPolicy"},
		{Config{Checks: []Check{nil}}, "validate: Config.Checks[0] is nil"},
		{Config{Semantic: []Check{func(*Answer) []Violation { return nil }, nil}}, "validate: Config.Semantic[1] is nil"},
	} {
		if v, err := New(tt.cfg); v != nil || err == nil || err.Error() != tt.want {
			t.Errorf("New(%+v) = %v, %v; want nil, %q", tt.cfg, v, err, tt.want)
		}
	}
}

func TestCheckDoesNotModify(t *testing.T) {
	v := MustNew(Config{TrimSpace: true})
	resp := answer("  {\"name\":\"x\",\"age\":1,\"role\":\"user\"} ")
	text := resp.Text
	req := schemaReq(personSchema)
	if err := v.Check(req, resp); err != nil {
		t.Fatal(err)
	}
	if resp.Text != text {
		t.Fatalf("Check changed resp.Text to %q", resp.Text)
	}
}

func TestPointer(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a", "0"}, "/a/0"},
		{[]string{"a/b", "~c"}, "/a~1b/~0c"},
		{[]string{""}, "/"},
	} {
		if got := Pointer(tt.in...); got != tt.want {
			t.Errorf("Pointer(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAllocsMatchRawLibrary(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	v := MustNew(Config{})
	req, resp := benchRequest()
	raw := rawValidator(t)
	checkAllocs := testing.AllocsPerRun(50, func() {
		if err := v.Check(req, resp); err != nil {
			t.Fatal(err)
		}
	})
	lib := testing.AllocsPerRun(50, func() { raw() })
	if checkAllocs > lib {
		t.Fatalf("allocs/op: pipeline %v > raw library %v", checkAllocs, lib)
	}
	// Exactly: the pipeline allocates its decode and the library's
	// validation of the decoded value, nothing else (Wrap adds nothing
	// either, outside streaming).
	p := &pipeline{v: v}
	value, _ := p.decode(benchAnswer)
	sch := v.cache.get(req.Schema.JSON).schema
	decode := testing.AllocsPerRun(50, func() { p.decode(benchAnswer) })
	validate := testing.AllocsPerRun(50, func() {
		if err := sch.Validate(value); err != nil {
			t.Fatal(err)
		}
	})
	if checkAllocs != decode+validate {
		t.Fatalf("allocs/op: pipeline %v, want decode %v + validation %v", checkAllocs, decode, validate)
	}
	m := v.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil }))
	wrapped := testing.AllocsPerRun(50, func() {
		if _, err := m.Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	if wrapped != checkAllocs {
		t.Fatalf("allocs/op: Wrap %v, want Check's %v", wrapped, checkAllocs)
	}
}

func TestFalseSubschema(t *testing.T) {
	v := MustNew(Config{})
	r := rejection(t, v.Check(schemaReq(`{"properties":{"x":false}}`), answer(`{"x":1}`)))
	if got := violationRules(r); !equal(got, []string{"schema/false@/x"}) {
		t.Fatalf("violations = %q, want schema/false@/x", got)
	}
}
