package portico

import (
	"context"
	"testing"
)

type ptrModel struct{}

func (*ptrModel) Generate(context.Context, *Request) (*Response, error) { return &Response{}, nil }

type valueModel struct{}

func (valueModel) Generate(context.Context, *Request) (*Response, error) { return &Response{}, nil }

// IsNil: a nil Model and a typed nil (a nil pointer, a nil ModelFunc) cannot
// answer; a value type can, as can a pointer to a zero value.
func TestIsNil(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Model
		want bool
	}{
		{"nil", nil, true},
		{"nil pointer", (*ptrModel)(nil), true},
		{"nil ModelFunc", ModelFunc(nil), true},
		{"pointer", &ptrModel{}, false},
		{"value", valueModel{}, false},
		{"ModelFunc", ModelFunc(func(context.Context, *Request) (*Response, error) { return nil, nil }), false},
	} {
		if got := IsNil(c.m); got != c.want {
			t.Errorf("IsNil(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("Chain of a typed nil did not panic")
		}
	}()
	Chain((*ptrModel)(nil))
}
