package route

import (
	"context"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

// A cascade that ends at a step that sent nothing after a step that may
// have been sent does not say NotSent, and keeps both errors; one whose
// steps all sent nothing does.
func TestCascadeNotSentAfterSentStep(t *testing.T) {
	ambiguous := &portico.Error{Class: portico.Ambiguous, Reason: "timeout after send"}
	s503 := &portico.Error{Class: portico.Transient, Status: 503}
	refused := &portico.Error{Class: portico.Rejected, Reason: "throttled", NotSent: true}
	unsent := &portico.Error{Class: portico.Transient, Reason: "connection refused", NotSent: true}
	permanent := &portico.Error{Class: portico.Permanent, Reason: "not encodable", NotSent: true}
	tests := []struct {
		name    string
		errs    [2]error // step a's, step b's
		class   portico.Class
		status  int
		notSent bool
	}{
		{"sent, then refused", [2]error{ambiguous, refused}, portico.Ambiguous, 0, false},
		{"503, then refused", [2]error{s503, refused}, portico.Transient, 503, false},
		{"sent, then a stop that sent nothing", [2]error{ambiguous, permanent}, portico.Permanent, 0, false},
		{"refused, then unsent", [2]error{refused, unsent}, portico.Transient, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := func(name string, err error) Step {
				return Step{Route: portico.Route{Name: name, Model: portico.ModelFunc(func(context.Context, *portico.Request) (*portico.Response, error) {
					return nil, err
				})}}
			}
			c, err := NewCascade(CascadeConfig{Steps: []Step{step("a", tt.errs[0]), step("b", tt.errs[1])}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Generate(context.Background(), userReq("hi"))
			var pe *portico.Error
			if !errors.As(err, &pe) || pe.Class != tt.class || pe.Status != tt.status || pe.NotSent != tt.notSent {
				t.Errorf("err = %v (status %d, NotSent %v), want class %v status %d NotSent %v", err, pe.Status, pe.NotSent, tt.class, tt.status, tt.notSent)
			}
			if portico.NothingSent(err) != tt.notSent {
				t.Errorf("NothingSent(%v) = %v, want %v", err, !tt.notSent, tt.notSent)
			}
			for _, target := range tt.errs {
				if !errors.Is(err, target) {
					t.Errorf("errors.Is(%v, %v) = false, want true", err, target)
				}
			}
		})
	}
}
