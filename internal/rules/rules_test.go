package rules

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// First names the first broken rule, in the table's order, and nil when
// none is broken.
func TestFirst(t *testing.T) {
	for _, c := range []struct {
		rs   []Rule
		want string // "" for nil
	}{
		{nil, ""},
		{[]Rule{If(false, "a"), If(false, "b")}, ""},
		{[]Rule{If(false, "a"), If(true, "b"), If(true, "c")}, "b"},
	} {
		got := ""
		if err := First(c.rs...); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("First(%v) = %q, want %q", c.rs, got, c.want)
		}
	}
}
