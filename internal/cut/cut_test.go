package cut

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestOf is the rule's table: (allowance against FaultAfter) x (the last
// route's time, or a part chosen while another route followed).
func TestOf(t *testing.T) {
	const fa = 10 * time.Second
	for _, c := range []struct {
		allowance, faultAfter time.Duration
		last                  bool
		want                  Cut
	}{
		{5 * time.Second, fa, false, Unanswered},
		{5 * time.Second, fa, true, Caller},
		{fa - 1, fa, false, Unanswered},
		{fa - 1, fa, true, Caller},
		{fa, fa, false, Fault},
		{fa, fa, true, Fault},
		{2 * time.Minute, fa, false, Fault},
		{2 * time.Minute, fa, true, Fault},
		{time.Millisecond, 0, false, Fault}, // FaultAfter negative: every cut is a fault
		{time.Millisecond, 0, true, Fault},
	} {
		if got := Of(c.allowance, c.faultAfter, c.last); got != c.want {
			t.Errorf("Of(%v, %v, %v) = %d, want %d", c.allowance, c.faultAfter, c.last, got, c.want)
		}
	}
}

// TestCauses: each cause is the timeout, matched as its cut says and no
// more.
func TestCauses(t *testing.T) {
	timeout := portico.NewLayerTimeout("test timeout")
	cs := Causes(timeout)
	for _, c := range []struct {
		cut             Cut
		short, unanswer bool
	}{{Fault, false, false}, {Caller, true, false}, {Unanswered, true, true}} {
		err := cs[c.cut]
		if !errors.Is(err, timeout) || !errors.Is(err, portico.ErrLayerTimeout) || err.Error() != "test timeout" {
			t.Errorf("Causes[%d] = %v, want the timeout", c.cut, err)
		}
		if got := errors.Is(err, portico.ErrDeadlineCut); got != c.short {
			t.Errorf("Causes[%d] is ErrDeadlineCut: %v, want %v", c.cut, got, c.short)
		}
		if got := errors.Is(err, portico.ErrUnanswered); got != c.unanswer {
			t.Errorf("Causes[%d] is ErrUnanswered: %v, want %v", c.cut, got, c.unanswer)
		}
	}
}
