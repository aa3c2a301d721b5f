package stack

import (
	"testing"
	"time"

	"github.com/portico-llm/portico"
)

// Once every remembered 404 has expired, the route forgets them all at its
// next request for any model, so that its requests read no lock again.
func TestNotServedForgetsWhenExpired(t *testing.T) {
	var m notServed
	t0 := time.Unix(1000, 0)
	m.remember("x", &portico.Error{Class: portico.Incompatible, Status: 404}, t0)
	m.remember("z", &portico.Error{Class: portico.Incompatible, Status: 404}, t0.Add(time.Minute))
	if err := m.refused("x", t0.Add(time.Second)); err == nil || m.n.Load() != 2 {
		t.Fatalf("refused(x) at 1s = %v, n = %d; want the 404, 2 remembered", err, m.n.Load())
	}
	if err := m.refused("y", t0.Add(notServedFor)); err != nil || m.n.Load() != 2 {
		t.Errorf("refused(y) as x expires = %v, n = %d; want nil, 2 (z has not expired)", err, m.n.Load())
	}
	if err := m.refused("y", t0.Add(time.Minute+notServedFor)); err != nil || m.n.Load() != 0 {
		t.Errorf("refused(y) once all expired = %v, n = %d; want nil, 0", err, m.n.Load())
	}
}
