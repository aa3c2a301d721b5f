package validate

import (
	"math"
	"testing"

	"github.com/portico-llm/portico"
)

// Seed 003 ("Convalida la risposta prima di accettarla"): for invoice
// extraction the semantic checks require a non-negative total, a supported
// currency code and line totals within an explicitly defined tolerance of the
// total. This file ships that example as a test.

type invoiceLine struct {
	Description string  `json:"description"`
	Total       float64 `json:"total"`
}

type invoice struct {
	Number   string        `json:"number"`
	Currency string        `json:"currency"`
	Total    float64       `json:"total"`
	Lines    []invoiceLine `json:"lines"`
}

// invoiceTolerance is the explicit tolerance between the sum of the line
// totals and the invoice total: half a cent. Amounts have two decimals, so
// an honest invoice differs by float64 rounding only (about 1e-13), and any
// real discrepancy is at least one cent.
const invoiceTolerance = 0.005

var supportedCurrencies = map[string]bool{"EUR": true, "USD": true, "GBP": true, "CHF": true}

// invoiceRules is the workload's semantic check.
func invoiceRules(inv invoice) []Violation {
	var out []Violation
	if inv.Total < 0 {
		out = append(out, Violation{Pointer: Pointer("total"), Rule: "total_non_negative"})
	}
	if !supportedCurrencies[inv.Currency] {
		out = append(out, Violation{Pointer: Pointer("currency"), Rule: "currency_supported"})
	}
	sum := 0.0
	for _, l := range inv.Lines {
		sum += l.Total
	}
	if math.Abs(sum-inv.Total) > invoiceTolerance {
		out = append(out, Violation{Pointer: Pointer("lines"), Rule: "line_totals_sum", Detail: "tolerance 0.005"})
	}
	return out
}

const invoiceSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["number", "currency", "total", "lines"],
  "properties": {
    "number": {"type": "string"},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "total": {"type": "number"},
    "lines": {"type": "array", "items": {
      "type": "object", "additionalProperties": false, "required": ["description", "total"],
      "properties": {"description": {"type": "string"}, "total": {"type": "number"}}
    }}
  }
}`

func TestSeed003Invoice(t *testing.T) {
	v := MustNew(Config{Semantic: []Check{Typed(invoiceRules)}})
	req := schemaReq(invoiceSchema)
	// The seed's contract: schema_id "invoice-v3", structured output
	// required and strict, so the schema must fit the strict subset.
	req.Schema.Name = "invoice-v3"
	req.Schema.Strict = true
	if ps := StrictCompatible(req.Schema.JSON); ps != nil {
		t.Fatalf("StrictCompatible(invoice schema) = %q, want nil: the seed asks for strict", problems(ps))
	}
	tests := []struct {
		name, text string
		want       []string // nil: accepted
	}{
		{"valid", `{"number":"F-1","currency":"EUR","total":100.10,"lines":[{"description":"a","total":60.05},{"description":"b","total":40.05}]}`, nil},
		{"rounding within tolerance", `{"number":"F-2","currency":"USD","total":0.3,"lines":[{"description":"a","total":0.1},{"description":"b","total":0.2}]}`, nil},
		{"sum off by 0.004", `{"number":"F-3","currency":"CHF","total":10.00,"lines":[{"description":"a","total":10.004}]}`, nil},
		{"zero total", `{"number":"F-4","currency":"GBP","total":0,"lines":[]}`, nil},
		{"negative total", `{"number":"F-5","currency":"EUR","total":-5,"lines":[{"description":"refund","total":-5}]}`,
			[]string{"semantic/total_non_negative@/total"}},
		{"unsupported currency", `{"number":"F-6","currency":"XYZ","total":1,"lines":[{"description":"a","total":1}]}`,
			[]string{"semantic/currency_supported@/currency"}},
		{"sum off by a cent", `{"number":"F-7","currency":"EUR","total":100.00,"lines":[{"description":"a","total":60.00},{"description":"b","total":40.01}]}`,
			[]string{"semantic/line_totals_sum@/lines"}},
		{"all three", `{"number":"F-8","currency":"BTC","total":-1,"lines":[{"description":"a","total":3}]}`,
			[]string{"semantic/total_non_negative@/total", "semantic/currency_supported@/currency", "semantic/line_totals_sum@/lines"}},
		{"schema and semantics both listed", `{"number":"F-9","currency":"eur","total":-1,"lines":[]}`,
			[]string{"schema/pattern@/currency", "semantic/total_non_negative@/total", "semantic/currency_supported@/currency", "semantic/line_totals_sum@/lines"}},
		{"missing total is never guessed", `{"number":"F-10","currency":"EUR","lines":[{"description":"a","total":1}]}`,
			[]string{"schema/required@/total", "semantic/line_totals_sum@/lines"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Check(req, &portico.Response{Text: tt.text, FinishReason: portico.FinishStop})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Check = %v, want accepted", err)
				}
				return
			}
			if got := violationRules(rejection(t, err)); !equal(got, tt.want) {
				t.Fatalf("violations = %q, want %q", got, tt.want)
			}
		})
	}
}
