package validate

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// A continuation (a request with a Prefix) is judged whole: the prefix the
// caller has joined to the rest by a portico.Seam. The rest alone would be
// no JSON, or empty; the Response keeps the rest, its end trimmed under
// TrimSpace, and a continuation that starts over and contradicts the prefix
// is refused.
func TestContinuationJudgedWhole(t *testing.T) {
	for _, tt := range []struct {
		name, prefix, rest, want string
		wantErr                  error
	}{
		{"JSON in two parts", `{"city": "Paris",`, ` "river": "Seine"}  `, ` "river": "Seine"}`, nil},
		{"nothing left to say", `{"city": "Paris"}`, ``, ``, nil},
		{"a restart that contradicts", `{"city": "Paris", "river":`, `{"city": "Paris", "sea": "none"}`, ``, portico.ErrRestart},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
				return &portico.Response{Text: tt.rest, FinishReason: portico.FinishStop}, nil
			})
			req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "q")}, Prefix: tt.prefix}
			resp, err := MustNew(Config{JSON: true, TrimSpace: true}).Wrap(m).Generate(context.Background(), req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || portico.ClassOf(err) != portico.InvalidResponse {
					t.Errorf("Generate = %v, %v; want InvalidResponse wrapping %v", resp, err, tt.wantErr)
				}
				return
			}
			if err != nil || resp.Text != tt.want {
				t.Errorf("Generate = %q, %v; want %q accepted", resp.Text, err, tt.want)
			}
		})
	}
	// Without the prefix, the rest alone is refused: the test above means it.
	m := portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
		return &portico.Response{Text: ` "river": "Seine"}`, FinishReason: portico.FinishStop}, nil
	})
	if _, err := MustNew(Config{JSON: true}).Wrap(m).Generate(context.Background(), &portico.Request{}); portico.ClassOf(err) != portico.InvalidResponse {
		t.Errorf("the rest judged alone = %v, want rejected", err)
	}
}
