package spend

import (
	"errors"
	"strconv"
	"time"
)

// ErrSpent is wrapped by the error of every call a budget refused
// (errors.Is); the [*SpentError] in its tree (errors.As) says which.
var ErrSpent = errors.New("spend: budget spent")

// SpentError says which budget refused a call and when it renews. The
// refusal is a [portico.RateLimited] *portico.Error, RefusedBy
// [portico.SpendBudget], NotSent, whose RetryAfter is the time until
// Renews, wrapping a SpentError.
type SpentError struct {
	// Limit is the budget that was spent.
	Limit Limit
	// Tier is the key's tier when its limits are a tier's; empty otherwise.
	Tier string
	// Renews is when the window ends and the budget is whole again.
	Renews time.Time
}

// Error says the window, the amount and when it renews; never the key.
func (e *SpentError) Error() string {
	s := "spend: " + e.Limit.Window.String() + " budget of " + strconv.FormatFloat(e.Limit.Amount, 'g', -1, 64)
	if e.Tier != "" {
		s += " (tier " + strconv.Quote(e.Tier) + ")"
	}
	return s + " spent, renews at " + e.Renews.UTC().Format(time.RFC3339)
}

// Unwrap returns ErrSpent.
func (e *SpentError) Unwrap() error { return ErrSpent }
