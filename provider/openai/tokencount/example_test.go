package tokencount_test

import (
	"fmt"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/provider/openai/tokencount"
)

// Example counts a request as OpenAI's gpt-4o bills it, and calibrates
// the count per route for the routes of other providers (give the result
// to stack.Config.Fallback.Estimator or a limiter's Config.Estimator).
func Example() {
	e, err := tokencount.New(tokencount.Config{Encoding: tokencount.O200kBase})
	if err != nil {
		panic(err)
	}
	req := &portico.Request{Messages: []portico.Message{portico.Text(portico.RoleUser, "hello world")}}
	fmt.Println(e.EstimateInputTokens(req)) // 3 framing + 1 role + 2 text + 3 reply

	cal, err := portico.NewCalibrated(e, portico.Calibration{})
	if err != nil {
		panic(err)
	}
	fmt.Println(cal.EstimateInputTokens(req)) // no usage reported yet
	// Output:
	// 9
	// 9
}
