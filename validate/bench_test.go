package validate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/portico-llm/portico"
)

// benchSchema has five properties, as the benchmark asks.
const benchSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["id", "customer", "total", "currency", "items"],
  "properties": {
    "id": {"type": "string", "pattern": "^INV-[0-9]+$"},
    "customer": {"type": "string", "minLength": 1},
    "total": {"type": "number", "minimum": 0},
    "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "CHF"]},
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["sku", "qty", "price"],
        "properties": {
          "sku": {"type": "string"},
          "qty": {"type": "integer", "minimum": 1},
          "price": {"type": "number", "minimum": 0}
        }
      }
    }
  }
}`

// benchAnswer is a ~300-byte object valid against benchSchema.
const benchAnswer = `{"id":"INV-20260042","customer":"Officina Meccanica Rossi S.r.l., Via Roma 12, Torino","total":1234.56,"currency":"EUR","items":[{"sku":"BRK-001","qty":4,"price":120.5},{"sku":"FLT-220","qty":2,"price":35.25},{"sku":"OIL-5W30","qty":10,"price":56.3},{"sku":"LAB-HR","qty":3,"price":54.02}]}`

func TestBenchAnswerSize(t *testing.T) {
	if n := len(benchAnswer); n < 250 || n > 350 {
		t.Fatalf("len(benchAnswer) = %d, want about 300", n)
	}
}

func benchRequest() (*portico.Request, *portico.Response) {
	req := &portico.Request{Schema: &portico.Schema{Name: "invoice", JSON: []byte(benchSchema)}}
	resp := &portico.Response{Text: benchAnswer, FinishReason: portico.FinishStop, Model: "m"}
	return req, resp
}

// rawValidator returns the library's own decode + validate of benchAnswer
// against benchSchema compiled once: the yardstick of the 1.1x goal.
func rawValidator(tb testing.TB) func() {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(benchSchema))
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.AddResource("s.json", doc); err != nil {
		tb.Fatal(err)
	}
	s := c.MustCompile("s.json")
	return func() {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(benchAnswer))
		if err != nil {
			tb.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkRaw is the library's decode + validate alone.
func BenchmarkRaw(b *testing.B) {
	raw := rawValidator(b)
	b.ReportAllocs()
	for b.Loop() {
		raw()
	}
}

// BenchmarkPaired alternates the raw library and the pipeline in every
// iteration and reports each one's ns/op and their ratio, so that load on a
// shared machine slows both alike instead of skewing the comparison.
func BenchmarkPaired(b *testing.B) {
	raw := rawValidator(b)
	v := MustNew(Config{})
	req, resp := benchRequest()
	pipe := func() {
		if err := v.Check(req, resp); err != nil {
			b.Fatal(err)
		}
	}
	// Warm both sides outside the timed loop: the pipeline's first call
	// compiles the schema into its cache (about a millisecond, the
	// metaschema check included), which would otherwise be charged to the
	// pipeline's first few thousand runs.
	raw()
	pipe()
	var tRaw, tPipe time.Duration
	first, second, tFirst, tSecond := raw, pipe, &tRaw, &tPipe
	for b.Loop() {
		// Swap the order every iteration so neither gains from going second.
		first, second, tFirst, tSecond = second, first, tSecond, tFirst
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		t2 := time.Now()
		*tFirst += t1.Sub(t0)
		*tSecond += t2.Sub(t1)
	}
	b.ReportMetric(float64(tRaw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(tPipe.Nanoseconds())/float64(b.N), "pipeline-ns/op")
	b.ReportMetric(float64(tPipe)/float64(tRaw), "ratio")
}

// BenchmarkCheck is the whole pipeline through Validator.Check.
func BenchmarkCheck(b *testing.B) {
	v := MustNew(Config{})
	req, resp := benchRequest()
	if err := v.Check(req, resp); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Check(req, resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrap is the pipeline as middleware around a Model returning the
// same answer.
func BenchmarkWrap(b *testing.B) {
	v := MustNew(Config{})
	req, resp := benchRequest()
	m := v.Wrap(portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return resp, nil
	}))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOverheadScan is the pipeline's own pre-decode pass over the answer.
func BenchmarkOverheadScan(b *testing.B) {
	v := MustNew(Config{})
	for b.Loop() {
		if rule, _ := v.lim.scan(benchAnswer); rule != "" {
			b.Fatal(rule)
		}
	}
}

// BenchmarkOverheadCache is one lookup of the compiled schema.
func BenchmarkOverheadCache(b *testing.B) {
	v := MustNew(Config{})
	raw := []byte(benchSchema)
	for b.Loop() {
		if c := v.cache.get(raw); c.schema == nil {
			b.Fatal(c.err)
		}
	}
}
