package anthropic_test

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/portico-llm/portico/modeltest/fakeanthropic"
	"github.com/portico-llm/portico/provider/anthropic"
)

// startPipe serves cfg over net.Pipe inside the caller's synctest bubble.
func startPipe(t *testing.T, cfg fakeanthropic.Config, opts ...option.RequestOption) (*fakeanthropic.Server, *anthropic.Model) {
	t.Helper()
	s, err := fakeanthropic.StartPipe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	all := append([]option.RequestOption{option.WithBaseURL(s.BaseURL()), option.WithAPIKey("k"), option.WithHTTPClient(s.Client())}, opts...)
	return s, anthropic.New(anthropic.Config{}, all...)
}
