package langchaingo

import (
	"cmp"
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"

	"github.com/portico-llm/portico"
)

// classes maps langchaingo's error codes to Portico's classes. A timeout is
// Ambiguous: the request may have reached the provider.
var classes = map[llms.ErrorCode]portico.Class{
	llms.ErrCodeAuthentication:      portico.Unusable,
	llms.ErrCodeRateLimit:           portico.RateLimited,
	llms.ErrCodeInvalidRequest:      portico.Incompatible,
	llms.ErrCodeResourceNotFound:    portico.Unusable,
	llms.ErrCodeTimeout:             portico.Ambiguous,
	llms.ErrCodeCanceled:            portico.Canceled,
	llms.ErrCodeQuotaExceeded:       portico.Unusable,
	llms.ErrCodeContentFilter:       portico.Incompatible,
	llms.ErrCodeTokenLimit:          portico.Incompatible,
	llms.ErrCodeProviderUnavailable: portico.Transient,
	llms.ErrCodeNotImplemented:      portico.Incompatible,
}

// Classify returns err, an error of a langchaingo model, as a classified
// *portico.Error: as the context's error when ctx ended; else by its
// llms.Error code, or the code langchaingo's own generic mapper
// (llms.NewErrorMapper) reads in its message (langchaingo's clients
// report a 429 as text); Permanent when neither places it (an error nobody
// classified: nothing retries it and no route is blamed, as
// [portico.ClassOf] rules). A *portico.Error in err is returned as it is.
func Classify(ctx context.Context, err error) error { return classify(ctx, err, "") }

// classify is Classify, naming model in the errors it makes.
func classify(ctx context.Context, err error, model string) error {
	var pe *portico.Error
	if err == nil || errors.As(err, &pe) {
		return err
	}
	if cerr := portico.FromContext(ctx); cerr != nil {
		return portico.Join(cerr, err)
	}
	return &portico.Error{Class: classOf(err), Model: model, Err: err}
}

// classOf is err's class by its llms.Error code, read as langchaingo's
// generic mapper reads it; Permanent when no code places it.
func classOf(err error) portico.Class {
	var le *llms.Error
	if errors.As(llms.NewErrorMapper("").Map(err), &le) {
		return cmp.Or(classes[le.Code], portico.Permanent)
	}
	return portico.Permanent
}
