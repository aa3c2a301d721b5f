package adapt_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/portico-llm/portico/provider/internal/adapt"
)

// An Exchange watches the response an SDK decodes: here a json.Decoder,
// which stops after the first value, reads a body with data after it, and
// Whole says so.
func ExampleExchange_Whole() {
	x := &adapt.Exchange{Limit: 1 << 20, TooLarge: errors.New("too large")}
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"answer": "yes"} {"answer": "no"}`)), ContentLength: -1}
	res, err := x.Watch(res, nil)
	if err != nil {
		panic(err)
	}
	var raw json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&raw); err != nil {
		panic(err)
	}
	fmt.Println(x.Status, string(raw), x.Whole(string(raw)))
	// Output: 200 {"answer": "yes"} false
}
