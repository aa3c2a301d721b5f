package portico

import "cmp"

// Estimator predicts N_in, the input tokens of a request, before it is sent, so
// that rate limiters can reserve N_in + N_max and routers can check context
// windows. Implementations must be safe for concurrent use and fast:
// they run on every call.
type Estimator interface {
	// EstimateInputTokens returns the estimated input tokens of req, >= 0.
	EstimateInputTokens(req *Request) int
}

// DefaultMaxTokens is N_max, in tokens, for a request whose MaxOutputTokens
// is 0, wherever a call is priced or reserved before it is sent and nothing
// configures another: [Capabilities.EstimateCost] (so routing's
// Contract.MaxCost, the rankers and spend budgets) and the rate limiter's
// default. A request's reasoning budget is added to it
// ([Request.OutputBound]).
const DefaultMaxTokens = 1024

// EstimatorFunc adapts a function to [Estimator].
type EstimatorFunc func(req *Request) int

// EstimateInputTokens calls f(req).
func (f EstimatorFunc) EstimateInputTokens(req *Request) int { return f(req) }

// DefaultEstimator is the estimator layers use when none is configured: a
// [CharEstimator] with its defaults.
var DefaultEstimator Estimator = CharEstimator{}

// CharEstimator estimates tokens from byte counts, without a tokenizer.
//
// The estimate is ceil(bytes / BytesPerToken) over every text part (and
// plain-text document data; other documents, audio and what a URL or file
// id names are not counted), tool call
// name and arguments, tool name, description and parameter schema and response schema,
// plus MessageOverhead tokens per message and ImageTokens per image.
//
// Its error: the default of 4 bytes per token is OpenAI's rule of thumb for
// English prose. Measured against o200k_base on the corpus of package
// provider/openai/tokencount (TestReservationError: code, JSON, prose,
// CJK, mixed), it is off by 18% on average, overestimates English prose
// by 20 to 25% and underestimates minified JSON by up to 38%; older encodings
// (cl100k_base) and other providers' tokenizers differ more on non-Latin
// scripts. Where the estimate matters (tight token limits), plug in a
// real tokenizer, or let the usage providers report scale it per route
// ([Calibrated], the default in package stack: 10.6% on the same
// corpus). Rate limiters
// refund on the provider's reported usage, so an error here shifts admission
// timing, not the long-run rate.
type CharEstimator struct {
	// BytesPerToken is the bytes of UTF-8 text per token; zero or negative
	// means 4.
	BytesPerToken float64
	// MessageOverhead is the tokens added per message for role and framing; zero
	// or negative means 4 (OpenAI's chat format adds 3–4 per message).
	MessageOverhead int
	// ImageTokens is the tokens counted per image part; zero or negative means
	// 765 (OpenAI's cost of a 1024x1024 image at high detail).
	ImageTokens int
}

// EstimateInputTokens returns the estimate described on [CharEstimator]. It does
// not allocate.
func (e CharEstimator) EstimateInputTokens(req *Request) int {
	bpt, overhead, img := cmp.Or(max(e.BytesPerToken, 0), 4), cmp.Or(max(e.MessageOverhead, 0), 4), cmp.Or(max(e.ImageTokens, 0), 765)
	bytes, tokens := 0, 0
	for i := range req.Messages {
		m := &req.Messages[i]
		tokens += overhead
		for _, p := range m.Content {
			switch {
			case p.Kind == PartImage:
				tokens += img
			case p.Kind == PartDocument && p.Media != nil && p.Media.Type == "text/plain":
				bytes += len(p.Media.Data)
			default:
				bytes += len(p.Text)
			}
		}
		for _, tc := range m.ToolCalls {
			bytes += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if req.Schema != nil {
		bytes += len(req.Schema.JSON)
	}
	if bpt == 4 {
		return tokens + (bytes+3)/4 // the default, without a float division
	}
	return tokens + int((float64(bytes)+bpt-1)/bpt)
}
