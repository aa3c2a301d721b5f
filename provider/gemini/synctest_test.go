package gemini_test

import (
	"testing"

	"github.com/portico-llm/portico/modeltest/fakegemini"
	"github.com/portico-llm/portico/provider/gemini"
)

// startPipe serves cfg over net.Pipe inside the caller's synctest bubble.
func startPipe(t *testing.T, cfg fakegemini.Config) (*fakegemini.Server, *gemini.Model) {
	t.Helper()
	s, err := fakegemini.StartPipe(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, newModel(t, gemini.Config{}, clientConfig(s))
}
