package portico_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/portico-llm/portico"
)

func TestPrioritySlots(t *testing.T) {
	for _, tc := range []struct {
		p                     portico.Priority
		limit, reserve, slots int
	}{
		{portico.Critical, 10, 2, 10},
		{portico.Default, 10, 2, 8},
		{portico.Sheddable, 10, 2, 6},
		{portico.Priority(7), 10, 2, 10}, // beyond Critical: Critical
		{portico.Priority(-7), 10, 2, 6}, // beyond Sheddable: Sheddable
		{portico.Default, 10, 0, 10},     // no reserve: the whole cap
		{portico.Default, 10, -3, 10},    // a negative reserve counts as zero
		{portico.Sheddable, 3, 2, 1},     // never below one slot
		{portico.Default, 1, 5, 1},       // an idle cap admits any call
		{portico.Sheddable, 0, 2, 0},     // no slots: none
	} {
		if got := tc.p.Slots(tc.limit, tc.reserve); got != tc.slots {
			t.Errorf("%v.Slots(%d, %d) = %d, want %d", tc.p, tc.limit, tc.reserve, got, tc.slots)
		}
	}
}

func TestPriorityString(t *testing.T) {
	for p, want := range map[portico.Priority]string{
		portico.Sheddable: "sheddable", portico.Default: "default", portico.Critical: "critical", 3: "Priority(3)",
	} {
		if got := p.String(); got != want {
			t.Errorf("Priority(%d).String() = %q, want %q", int8(p), got, want)
		}
	}
	var zero portico.Request
	if zero.Priority != portico.Default {
		t.Errorf("zero Request's Priority = %v, want default", zero.Priority)
	}
}

func TestPriorityFromContext(t *testing.T) {
	ctx := context.Background()
	if got := portico.PriorityFrom(ctx); got != portico.Default {
		t.Errorf("PriorityFrom(empty) = %v, want default", got)
	}
	if got := portico.PriorityFrom(portico.WithPriority(ctx, portico.Sheddable)); got != portico.Sheddable {
		t.Errorf("PriorityFrom(WithPriority(sheddable)) = %v, want sheddable", got)
	}
}

// A cap of 10 slots with 2 reserved per level: Default calls may fill 8,
// Sheddable calls 6, Critical calls all 10.
func ExamplePriority_Slots() {
	for _, p := range []portico.Priority{portico.Sheddable, portico.Default, portico.Critical} {
		fmt.Println(p, p.Slots(10, 2))
	}
	// Output:
	// sheddable 6
	// default 8
	// critical 10
}
