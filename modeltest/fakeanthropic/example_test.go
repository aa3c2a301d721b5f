package fakeanthropic_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/portico-llm/portico/modeltest/fakeanthropic"
)

// Example scripts a model's first two requests (a 529 overloaded_error, then
// an answer) and reads both over plain HTTP, as any Anthropic client would:
// the error body, then the event names of the streamed answer.
func Example() {
	s, err := fakeanthropic.Start(fakeanthropic.Config{Seed: 1, Models: []fakeanthropic.ModelConfig{{
		Name: "claude-test", OutputTokens: 2,
		Script: []fakeanthropic.Fault{{Kind: fakeanthropic.FaultStatus, Status: 529}, {}},
	}}})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	send := func(body string) *http.Response {
		r, _ := http.NewRequest(http.MethodPost, s.BaseURL()+"v1/messages", strings.NewReader(body))
		r.Header.Set("x-api-key", "not-needed")
		r.Header.Set("anthropic-version", "2023-06-01")
		res, err := s.Client().Do(r)
		if err != nil {
			panic(err)
		}
		return res
	}
	const req = `{"model":"claude-test","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Say hi"}]}`

	res := send(req)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, string(b))

	res = send(req)
	var names []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names = append(names, name)
		}
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, strings.Join(names, " "))
	fmt.Println("requests:", s.Count("claude-test"))
	// Output:
	// 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_fake"}
	// 200 message_start content_block_start ping content_block_delta content_block_delta content_block_stop message_delta message_stop
	// requests: 2
}
