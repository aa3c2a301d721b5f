package enum

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type color int8

var colorNames = [...]string{1: "red", 2: "green"}

// Name names each value the table names, and any other as "Type(n)":
// below the table, a gap in it, past its end.
func TestName(t *testing.T) {
	for v, want := range map[color]string{1: "red", 2: "green", 0: "color(0)", 3: "color(3)", -1: "color(-1)"} {
		if got := Name(colorNames[:], v, "color"); got != want {
			t.Errorf("Name(%d) = %q, want %q", v, got, want)
		}
	}
}
