package fallback

import (
	"strings"
	"testing"

	"github.com/portico-llm/portico"
	"github.com/portico-llm/portico/modeltest"
)

// A typed nil Model (a nil *modeltest.Fake here; a nil *openai.Model in a
// service) is refused when the group is built, as a nil one.
func TestTypedNilModel(t *testing.T) {
	_, err := New(Config{Routes: []portico.Route{{Name: "a", Model: modeltest.NewFake()}, {Name: "b", Model: (*modeltest.Fake)(nil)}}})
	if err == nil || !strings.HasPrefix(err.Error(), "fallback: ") {
		t.Errorf("New with a typed nil Model = %v, want an error starting with \"fallback: \"", err)
	}
}
