package fakeopenai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/portico-llm/portico/modeltest/fakeopenai"
)

// Example starts a server with a healthy model and one that answers 503 to
// every request, and calls both over plain HTTP.
func Example() {
	s, err := fakeopenai.Start(fakeopenai.Config{Seed: 7, Models: []fakeopenai.ModelConfig{
		{Name: "good", OutputTokens: 3},
		{Name: "down", Faults: []fakeopenai.Fault{
			{Kind: fakeopenai.FaultStatus, Status: 503, RetryAfter: 2 * time.Second, Fraction: 1},
		}},
	}})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	for _, model := range []string{"good", "down"} {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
		res, err := s.Client().Post(s.BaseURL()+"chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var out struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &out)
		if res.StatusCode == http.StatusOK {
			fmt.Printf("%s: %d %q %s\n", model, res.StatusCode, out.Choices[0].Message.Content, out.Choices[0].FinishReason)
		} else {
			fmt.Printf("%s: %d %s retry-after %s\n", model, res.StatusCode, out.Error.Type, res.Header.Get("retry-after"))
		}
	}
	fmt.Println("requests:", s.Count("good"), s.Count("down"))
	// Output:
	// good: 200 "ipsum commodo enim" stop
	// down: 503 server_error retry-after 2
	// requests: 1 1
}
