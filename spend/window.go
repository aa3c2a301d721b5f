package spend

import (
	"time"

	"github.com/portico-llm/portico/internal/enum"
)

// Window is the calendar period a budget covers, in UTC: a budget of 5
// per Day may spend 5 from 00:00 UTC to the next 00:00 UTC, and renews
// then, whatever was spent. The zero Window is not a period (New refuses
// it).
type Window uint8

// The windows. A key has at most one budget per Window.
const (
	Minute Window = iota + 1 // a calendar minute
	Hour                     // a calendar hour
	Day                      // a calendar day, from 00:00 UTC
	Month                    // a calendar month, from the 1st, 00:00 UTC
)

// numWindows bounds the windows a key may have budgets for: a key's state
// is one slot per Window, so its memory is fixed.
const numWindows = int(Month) + 1

var windowNames = [...]string{Minute: "minute", Hour: "hour", Day: "day", Month: "month"}

// String returns "minute", "hour", "day" or "month".
func (w Window) String() string { return enum.Name(windowNames[:], w, "Window") }

// Of returns the window of kind w that t falls in: its number (distinct
// for every window of kind w, and increasing with time) and the time it
// ends, when the budget renews.
func (w Window) Of(t time.Time) (id int64, end time.Time) {
	t = t.UTC()
	switch w {
	case Minute:
		start := t.Truncate(time.Minute)
		return start.Unix() / 60, start.Add(time.Minute)
	case Hour:
		start := t.Truncate(time.Hour)
		return start.Unix() / 3600, start.Add(time.Hour)
	case Day:
		y, m, d := t.Date()
		start := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return start.Unix() / 86400, start.AddDate(0, 0, 1)
	case Month:
		y, m, _ := t.Date()
		return int64(y)*12 + int64(m) - 1, time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return 0, t
}

// Limit is one budget: the most a key may spend in each Window, in the
// price unit of [portico.Capabilities] (say US dollars).
type Limit struct {
	Window Window
	// Amount is the budget per window, > 0.
	Amount float64
}
