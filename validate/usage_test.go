package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// TestRejectionCarriesBilledUsage: a refused answer was billed, so the
// rejection's *portico.Error carries a copy of its Usage (for routing layers
// to add its cost to Response.Cost); without a Response there is none.
func TestRejectionCarriesBilledUsage(t *testing.T) {
	billed := portico.Usage{InputTokens: 1000, OutputTokens: 100, CachedInputTokens: 200}
	resp := answer("not json")
	resp.Usage = billed
	next := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) { return resp, nil })
	_, err := MustNew(Config{}).Wrap(next).Generate(context.Background(), schemaReq(`{"type":"object"}`))
	rejection(t, err)
	var pe *portico.Error
	if !errors.As(err, &pe) || pe.Usage == nil || *pe.Usage != billed {
		t.Fatalf("Generate's error Usage = %v, want %+v", pe, billed)
	}
	resp.Usage.OutputTokens = 7 // a copy: later changes to the answer do not reach it
	if pe.Usage.OutputTokens != 100 {
		t.Errorf("Usage.OutputTokens = %d after the answer changed, want 100 (a copy)", pe.Usage.OutputTokens)
	}
	err = MustNew(Config{}).Check(schemaReq(`{"type":"object"}`), resp)
	if !errors.As(err, &pe) || pe.Usage == nil || pe.Usage.OutputTokens != 7 {
		t.Fatalf("Check's error Usage = %v, want the answer's", pe)
	}
	err = MustNew(Config{}).Check(schemaReq(`{}`), nil)
	if !errors.As(err, &pe) || pe.Usage != nil {
		t.Fatalf("Check(nil Response) error Usage = %+v, want nil", pe.Usage)
	}
}
