package portico

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestFits(t *testing.T) {
	full := Capabilities{ContextWindow: 8192, MaxOutput: 4096, Modalities: ModalityText | ModalityImage,
		Tools: true, Schema: SchemaStrict, ModelClass: "frontier", InputPrice: 1e-6, OutputPrice: 4e-6}
	textOnly := Capabilities{ContextWindow: 8192}
	user := []Message{Text(RoleUser, "hi")}
	img := []Message{{Role: RoleUser, Content: []Part{{Kind: PartImage, ImageURL: "data:image/png;base64,AA=="}}}}
	tests := []struct {
		name string
		caps Capabilities
		req  Request
		nIn  int
		want string // "" fits, else the Reason
	}{
		{"fits", full, Request{Messages: user, MaxOutputTokens: 100}, 10, ""},
		{"image on text route", textOnly, Request{Messages: img}, 10, "modality"},
		{"image on image route", full, Request{Messages: img}, 10, ""},
		{"contract modality", textOnly, Request{Messages: user, Contract: &Contract{Modalities: ModalityImage}}, 10, "modality"},
		{"window exact", textOnly, Request{Messages: user, MaxOutputTokens: 192}, 8000, ""},
		{"window over by one", textOnly, Request{Messages: user, MaxOutputTokens: 193}, 8000, "context window"},
		{"contract max input", textOnly, Request{Messages: user, MaxOutputTokens: 100, Contract: &Contract{MaxInputTokens: 8100}}, 10, "context window"},
		{"unknown window fits", Capabilities{}, Request{Messages: user, MaxOutputTokens: 1 << 20}, 1 << 20, ""},
		{"huge max output does not overflow", textOnly, Request{Messages: user, MaxOutputTokens: math.MaxInt}, 10, "context window"},
		{"huge input does not overflow", textOnly, Request{Messages: user, MaxOutputTokens: 10, Contract: &Contract{MaxInputTokens: math.MaxInt}}, 10, "context window"},
		{"negative max output", Capabilities{}, Request{Messages: user, MaxOutputTokens: -1000}, 10, "negative token count"},
		{"negative input", Capabilities{}, Request{Messages: user}, -1, "negative token count"},
		// Wrong on any route: said before what this route lacks.
		{"negative max output of an image on a text route", textOnly, Request{Messages: img, MaxOutputTokens: -1}, 10, "negative token count"},
		{"max output", full, Request{Messages: user, MaxOutputTokens: 4097}, 10, "max output"},
		// "user" + "hi": 6 bytes.
		{"size at the limit", Capabilities{MaxRequestBytes: 6}, Request{Messages: user}, 10, ""},
		{"size over the limit", Capabilities{MaxRequestBytes: 5}, Request{Messages: user}, 10, "request size"},
		{"tools", textOnly, Request{Messages: user, Tools: []Tool{{Name: "f"}}}, 10, "tools"},
		{"tools required", textOnly, Request{Messages: user, Contract: &Contract{ToolsRequired: true}}, 10, "tools"},
		{"schema", textOnly, Request{Messages: user, Schema: &Schema{Name: "s", JSON: json.RawMessage(`{}`)}}, 10, "schema"},
		{"schema id", Capabilities{Schema: SchemaJSONObject}, Request{Messages: user, Contract: &Contract{SchemaID: "x"}}, 10, "schema"},
		{"strict", Capabilities{Schema: SchemaJSON}, Request{Messages: user, Schema: &Schema{Strict: true}}, 10, "strict schema"},
		{"strict ok", full, Request{Messages: user, Contract: &Contract{StrictSchema: true}}, 10, ""},
		{"class", full, Request{Messages: user, Contract: &Contract{ModelClasses: []string{"small"}}}, 10, "model class"},
		{"class ok", full, Request{Messages: user, Contract: &Contract{ModelClasses: []string{"small", "frontier"}}}, 10, ""},
		// 1000 in at 1e-6 + 100 out at 4e-6 = 0.0014
		{"cost ok", full, Request{Messages: user, MaxOutputTokens: 100, Contract: &Contract{MaxCost: 0.0014}}, 1000, ""},
		{"cost over", full, Request{Messages: user, MaxOutputTokens: 101, Contract: &Contract{MaxCost: 0.0014}}, 1000, "cost"},
		// A malformed contract is wrong on any route, checked before the rest.
		{"negative deadline", full, Request{Messages: img, Contract: &Contract{Deadline: -time.Second, Modalities: ModalityImage}}, 10, "negative Contract.Deadline"},
		{"negative deadline on a text route", textOnly, Request{Messages: img, Contract: &Contract{Deadline: -1}}, 10, "negative Contract.Deadline"},
		{"negative max cost", full, Request{Messages: user, Contract: &Contract{MaxCost: -0.01}}, 10, "negative or NaN Contract.MaxCost"},
		{"NaN max cost", full, Request{Messages: user, Contract: &Contract{MaxCost: math.NaN()}}, 10, "negative or NaN Contract.MaxCost"},
		{"negative contract max input", full, Request{Messages: user, Contract: &Contract{MaxInputTokens: -1}}, 10, "negative Contract.MaxInputTokens"},
		{"unknown contract modality", full, Request{Messages: user, Contract: &Contract{Modalities: 1 << 5}}, 10, "unknown Contract.Modalities"},
	}
	for _, tt := range tests {
		err := tt.caps.Fits(&tt.req, tt.nIn)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: Fits = %v, want nil", tt.name, err)
			}
			continue
		}
		wantClass := Incompatible
		if tt.want == "negative token count" || strings.Contains(tt.want, "Contract.") {
			wantClass = Permanent
		}
		var e *Error
		if !errors.As(err, &e) || e.Class != wantClass || e.Reason != tt.want {
			t.Errorf("%s: Fits = %v, want %v %q", tt.name, err, wantClass, tt.want)
		}
	}
}

func TestFitsAllocs(t *testing.T) {
	caps := Capabilities{ContextWindow: 8192, Tools: true}
	req := &Request{Messages: []Message{Text(RoleUser, "hi")}, MaxOutputTokens: 10}
	if n := testing.AllocsPerRun(100, func() { _ = caps.Fits(req, 10) }); n != 0 {
		t.Errorf("Fits allocs = %v, want 0", n)
	}
}

func TestCost(t *testing.T) {
	c := Capabilities{InputPrice: 2, OutputPrice: 10, CachedInputPrice: 1}
	// 100 in, 40 of them cached: 60*2 + 40*1 + 5*10 = 210
	if got := c.Cost(Usage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 5}); got != 210 {
		t.Errorf("Cost = %v, want 210", got)
	}
	c.CachedInputPrice = 0 // cached at full price: 100*2 + 50
	if got := c.Cost(Usage{InputTokens: 100, CachedInputTokens: 40, OutputTokens: 5}); got != 250 {
		t.Errorf("Cost = %v, want 250", got)
	}
}

func TestCharEstimator(t *testing.T) {
	req := &Request{
		Messages: []Message{
			Text(RoleSystem, "12345678"), // 8 bytes
			{Role: RoleUser, Content: []Part{{Kind: PartText, Text: "abcd"}, {Kind: PartImage, ImageURL: "https://x"}}},
		},
		Tools: []Tool{{Name: "ab", Description: "cd", Parameters: json.RawMessage(`{}`)}}, // 6 bytes
	}
	// bytes = 8 + 4 + 6 = 18 -> ceil(18/4) = 5; 2 messages * 4 = 8; one image 765.
	if got, want := DefaultEstimator.EstimateInputTokens(req), 5+8+765; got != want {
		t.Errorf("EstimateInputTokens = %d, want %d", got, want)
	}
	e := CharEstimator{BytesPerToken: 3, MessageOverhead: 1, ImageTokens: 85}
	// ceil(18/3) = 6; 2; 85
	if got, want := e.EstimateInputTokens(req), 6+2+85; got != want {
		t.Errorf("EstimateInputTokens = %d, want %d", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = DefaultEstimator.EstimateInputTokens(req) }); n != 0 {
		t.Errorf("EstimateInputTokens allocs = %v, want 0", n)
	}
}

func TestModalitiesAndStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{ModalityText.String(), "text"},
		{(ModalityText | ModalityImage).String(), "text+image"},
		{Modality(0).String(), "none"},
		{SchemaStrict.String(), "strict"},
		{PartImage.String(), "image"},
		{EventRetry.String(), "retry"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func TestFitsRejectAllocs(t *testing.T) {
	caps := Capabilities{ContextWindow: 100}
	req := &Request{Messages: []Message{Text(RoleUser, "hi")}, MaxOutputTokens: 10}
	if n := testing.AllocsPerRun(100, func() { _ = caps.Fits(req, 1000) }); n != 0 {
		t.Errorf("Fits (rejecting) allocs = %v, want 0", n)
	}
}

// TestEstimateCost: input at InputPrice plus N_max at OutputPrice, N_max
// being MaxOutputTokens, else DefaultMaxTokens plus a reasoning budget,
// capped at the route's MaxOutput; an embedding has no output.
func TestEstimateCost(t *testing.T) {
	c := Capabilities{InputPrice: 1, OutputPrice: 3}
	req := &Request{MaxOutputTokens: 10}
	if got := c.EstimateCost(req, 5); got != 35 {
		t.Errorf("EstimateCost = %v, want 5*1 + 10*3 = 35", got)
	}
	if got := c.EstimateCost(&Request{MaxOutputTokens: -10}, -5); got != 3072 {
		t.Errorf("EstimateCost(negative) = %v, want 0 + 1024*3 = 3072", got)
	}
	req.Contract = &Contract{MaxInputTokens: 20}
	if got := c.EstimateCost(req, 5); got != 50 {
		t.Errorf("EstimateCost = %v, want 20*1 + 10*3 = 50 (contract's input)", got)
	}
	for _, tc := range []struct {
		name string
		caps Capabilities
		req  Request
		want float64
	}{
		{"default N_max", c, Request{}, 5 + 1024*3},
		{"reasoning budget", c, Request{Reasoning: &Reasoning{Budget: 2000}}, 5 + 3024*3},
		{"route's MaxOutput", Capabilities{InputPrice: 1, OutputPrice: 3, MaxOutput: 100}, Request{}, 5 + 100*3},
		{"MaxOutputTokens over MaxOutput", Capabilities{InputPrice: 1, OutputPrice: 3, MaxOutput: 100}, Request{MaxOutputTokens: 200}, 5 + 200*3},
		{"embedding", c, Request{Embedding: &Embedding{}}, 5},
	} {
		if got := tc.caps.EstimateCost(&tc.req, 5); got != tc.want {
			t.Errorf("%s: EstimateCost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRequestFor(t *testing.T) {
	req := &Request{Model: "a"}
	if got := (&Route{}).RequestFor(req); got != req {
		t.Errorf("RequestFor without ModelName copied the request")
	}
	if got := (&Route{ModelName: "a"}).RequestFor(req); got != req {
		t.Errorf("RequestFor with the same name copied the request")
	}
	got := (&Route{ModelName: "b"}).RequestFor(req)
	if got == req || got.Model != "b" || req.Model != "a" {
		t.Errorf("RequestFor = %q (same %v), caller's %q; want a copy named b, caller's a", got.Model, got == req, req.Model)
	}
}

// Validate refuses each value that can only be a mistake, naming the field,
// and accepts the zero Capabilities and the edges.
func TestCapabilitiesValidate(t *testing.T) {
	bad := []struct {
		caps Capabilities
		want string
	}{
		{Capabilities{ContextWindow: -1}, "portico: Capabilities.ContextWindow is negative (-1)"},
		{Capabilities{MaxOutput: -4096}, "portico: Capabilities.MaxOutput is negative (-4096)"},
		{Capabilities{MaxRequestBytes: -1}, "portico: Capabilities.MaxRequestBytes is negative (-1)"},
		{Capabilities{Modalities: 1 << 4}, "portico: Capabilities.Modalities has unknown bits (Modality(16))"},
		{Capabilities{Schema: SchemaStrict + 1}, "portico: Capabilities.Schema is not a SchemaMode (SchemaMode(4))"},
		{Capabilities{InputPrice: -1e-6}, "portico: Capabilities.InputPrice must be a finite price >= 0 (-1e-06)"},
		{Capabilities{OutputPrice: math.NaN()}, "portico: Capabilities.OutputPrice must be a finite price >= 0 (NaN)"},
		{Capabilities{CachedInputPrice: math.Inf(1)}, "portico: Capabilities.CachedInputPrice must be a finite price >= 0 (+Inf)"},
		{Capabilities{CacheWritePrice: -1}, "portico: Capabilities.CacheWritePrice must be a finite price >= 0 (-1)"},
		{Capabilities{CacheWrite1hPrice: math.NaN()}, "portico: Capabilities.CacheWrite1hPrice must be a finite price >= 0 (NaN)"},
	}
	for _, tt := range bad {
		if err := tt.caps.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("%+v.Validate() = %v, want %q", tt.caps, err, tt.want)
		}
	}
	for _, c := range []Capabilities{{}, {ContextWindow: math.MaxInt, MaxOutput: math.MaxInt, Modalities: ModalityText | ModalityImage,
		Schema: SchemaStrict, InputPrice: math.MaxFloat64}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v, want nil", c, err)
		}
	}
}

func TestContractValidate(t *testing.T) {
	if err := (&Contract{}).Validate(); err != nil {
		t.Errorf("Contract{}.Validate() = %v, want nil", err)
	}
	if err := (&Contract{Deadline: time.Nanosecond, MaxCost: math.Inf(1), MaxInputTokens: math.MaxInt}).Validate(); err != nil {
		t.Errorf("Validate of the edges = %v, want nil", err)
	}
	err := (&Contract{Deadline: -time.Second}).Validate()
	if got, want := err.Error(), "portico: permanent: negative Contract.Deadline"; got != want || ClassOf(err) != Permanent {
		t.Errorf("Validate(negative Deadline) = %q (%v), want %q (permanent)", got, ClassOf(err), want)
	}
	k := &Contract{MaxCost: -1}
	if n := testing.AllocsPerRun(100, func() { _ = k.Validate() }); n != 0 {
		t.Errorf("Validate allocs = %v, want 0", n)
	}
}

// Request.Validate refuses what is wrong on any route, Contract first, with
// Fits' shared Permanent errors, and allocates nothing.
func TestRequestValidate(t *testing.T) {
	user := []Message{Text(RoleUser, "hi")}
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Messages: user}, ""},
		{Request{Messages: user, MaxOutputTokens: 0, Contract: &Contract{}}, ""},
		{Request{Messages: user, MaxOutputTokens: -1}, "portico: permanent: negative token count"},
		{Request{Messages: user, MaxOutputTokens: -1, Contract: &Contract{Deadline: -1}}, "portico: permanent: negative Contract.Deadline"},
		{Request{}, "portico: permanent: no messages"},
		{Request{Model: "m", Tools: []Tool{{Name: "f"}}, Prefix: "The"}, "portico: permanent: no messages"},
		{Request{Messages: []Message{}, Contract: &Contract{Deadline: -1}}, "portico: permanent: no messages"},
	} {
		err := tc.req.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tc.req, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || ClassOf(err) != Permanent {
			t.Errorf("Validate(%+v) = %v, want %q (permanent)", tc.req, err, tc.want)
		}
		caps := Capabilities{}
		if ferr := caps.Fits(&tc.req, 10); ferr != err {
			t.Errorf("Fits = %v, want Validate's %v", ferr, err)
		}
	}
	bad := &Request{Messages: user, MaxOutputTokens: -1}
	if n := testing.AllocsPerRun(100, func() { _ = bad.Validate() }); n != 0 {
		t.Errorf("Validate allocs = %v, want 0", n)
	}
}

// TestRequestSize: Size counts every string a provider receives but Extra,
// and allocates nothing.
func TestRequestSize(t *testing.T) {
	req := &Request{
		Model: "gpt", // 3
		Messages: []Message{
			Text(RoleSystem, "be brief"), // 6 + 8
			{Role: RoleUser, Content: []Part{{Kind: PartText, Text: "look"}, {Kind: PartImage, ImageURL: "data:image/png;base64,AAAA"}}}, // 4 + 4 + 26
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "get", Arguments: json.RawMessage(`{"a":1}`)}}},                 // 9 + 2 + 3 + 7
			{Role: RoleTool, ToolCallID: "c1", Content: []Part{{Kind: PartText, Text: "42"}}},                                            // 4 + 2 + 2
		},
		Tools:  []Tool{{Name: "get", Description: "gets", Parameters: json.RawMessage(`{}`)}}, // 3 + 4 + 2
		Schema: &Schema{Name: "s", JSON: json.RawMessage(`{"type":"object"}`)},                // 1 + 17
		Prefix: "The",                                                                         // 3
		Extra:  map[string]any{"seed": 1},
	}
	if got, want := req.Size(), 3+14+34+21+8+9+18+3; got != want {
		t.Errorf("Size = %d, want %d", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { _ = req.Size() }); n != 0 {
		t.Errorf("Size allocs = %v, want 0", n)
	}
}

// TestCovers: each need Fits checks, met by c and unmet by o or the other
// way round, decides Covers; what Fits never reads (names, prices) does not.
func TestCovers(t *testing.T) {
	base := Capabilities{ContextWindow: 8192, MaxOutput: 1024, Modalities: ModalityText, Schema: SchemaJSON, ModelClass: "small"}
	with := func(f func(*Capabilities)) Capabilities { c := base; f(&c); return c }
	tests := []struct {
		name string
		c, o Capabilities
		want bool
	}{
		{"equal", base, base, true},
		{"names and prices differ", with(func(c *Capabilities) { c.Provider, c.Region, c.Quota, c.InputPrice = "b", "eu", "q", 1 }), base, true},
		{"zero modalities are text", with(func(c *Capabilities) { c.Modalities = 0 }), base, true},
		{"image and text cover text", with(func(c *Capabilities) { c.Modalities = ModalityText | ModalityImage }), base, true},
		{"text does not cover image", base, with(func(c *Capabilities) { c.Modalities = ModalityImage }), false},
		{"larger window", with(func(c *Capabilities) { c.ContextWindow = 16384 }), base, true},
		{"no window covers a window", with(func(c *Capabilities) { c.ContextWindow = 0 }), base, true},
		{"smaller window", with(func(c *Capabilities) { c.ContextWindow = 8191 }), base, false},
		{"a window does not cover none", base, with(func(c *Capabilities) { c.ContextWindow = 0 }), false},
		{"no output limit covers one", with(func(c *Capabilities) { c.MaxOutput = 0 }), base, true},
		{"smaller output limit", with(func(c *Capabilities) { c.MaxOutput = 1023 }), base, false},
		{"an output limit does not cover none", base, with(func(c *Capabilities) { c.MaxOutput = 0 }), false},
		{"no size limit covers one", base, with(func(c *Capabilities) { c.MaxRequestBytes = 1000 }), true},
		{"larger size limit", with(func(c *Capabilities) { c.MaxRequestBytes = 1001 }), with(func(c *Capabilities) { c.MaxRequestBytes = 1000 }), true},
		{"smaller size limit", with(func(c *Capabilities) { c.MaxRequestBytes = 999 }), with(func(c *Capabilities) { c.MaxRequestBytes = 1000 }), false},
		{"a size limit does not cover none", with(func(c *Capabilities) { c.MaxRequestBytes = 1000 }), base, false},
		{"tools cover none", with(func(c *Capabilities) { c.Tools = true }), base, true},
		{"no tools", base, with(func(c *Capabilities) { c.Tools = true }), false},
		{"strict covers json", with(func(c *Capabilities) { c.Schema = SchemaStrict }), base, true},
		{"json does not cover strict", base, with(func(c *Capabilities) { c.Schema = SchemaStrict }), false},
		{"another class", with(func(c *Capabilities) { c.ModelClass = "frontier" }), base, false},
		{"continuation covers none", with(func(c *Capabilities) { c.Continuation = ContinuePrefill }), base, true},
		{"no continuation", base, with(func(c *Capabilities) { c.Continuation = ContinuePrefill }), false},
		{"reasoning covers none", with(func(c *Capabilities) { c.Reasoning = true }), base, true},
		{"no reasoning", base, with(func(c *Capabilities) { c.Reasoning = true }), false},
	}
	for _, tt := range tests {
		if got := tt.c.Covers(&tt.o); got != tt.want {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzCovers: when c covers o, every request without MaxCost that o fits,
// c fits too, at the same input size.
func FuzzCovers(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0), 100)
	f.Add(uint64(0x1234_5678_9abc), uint64(0xfedc_ba98_7654), uint64(0x0f0f_0f0f), 9000)
	f.Fuzz(func(t *testing.T, a, b, r uint64, in int) {
		caps := func(x uint64) Capabilities {
			return Capabilities{
				ContextWindow: []int{0, 4096, 8192, 16384}[x&3],
				MaxOutput:     []int{0, 512, 1024, 4096}[x>>2&3],
				Modalities:    Modality(x >> 4 & 3),
				Tools:         x>>6&1 == 1,
				Schema:        SchemaMode(x >> 7 & 3),
				ModelClass:    []string{"", "small"}[x>>9&1],
				Continuation:  Continuation(x >> 10 & 1),
				// 0, or a limit below or above the sizes of the requests below (2 to 11 bytes)
				MaxRequestBytes: []int{0, 5, 10, 100}[x>>11&3],
				Reasoning:       x>>13&1 == 1,
			}
		}
		c, o := caps(a), caps(b)
		k := &Contract{
			Modalities:     Modality(r & 3),
			MaxInputTokens: []int{0, 2000, 9000, 20000}[r>>2&3],
			ToolsRequired:  r>>4&1 == 1,
			StrictSchema:   r>>5&1 == 1,
			SchemaID:       []string{"", "s"}[r>>6&1],
			ModelClasses:   [][]string{nil, {"small"}, {""}}[(r>>7&3)%3],
		}
		req := &Request{Messages: []Message{Text(RoleUser, []string{"hi", "hello"}[r>>15&1])}, Contract: k,
			MaxOutputTokens: []int{0, 100, 1000, 5000}[r>>9&3], Prefix: []string{"", "The"}[r>>11&1]}
		if r>>12&1 == 1 {
			req.Tools = []Tool{{Name: "f"}}
		}
		if r>>13&1 == 1 {
			req.Schema = &Schema{Name: "s", Strict: r>>14&1 == 1}
		}
		if r>>16&1 == 1 {
			req.Reasoning = &Reasoning{Required: r>>17&1 == 1}
		}
		if c.Covers(&o) && o.Fits(req, in) == nil {
			if err := c.Fits(req, in); err != nil {
				t.Fatalf("%+v covers %+v, which fits %+v at %d, but Fits = %v", c, o, req, in, err)
			}
		}
	})
}
