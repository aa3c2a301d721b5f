package anthropic_test

import (
	"testing"

	"github.com/portico-llm/portico"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func userReq(model, text string) *portico.Request {
	return &portico.Request{Model: model, Messages: []portico.Message{portico.Text(portico.RoleUser, text)}}
}

func respText(r *portico.Response) string {
	if r == nil {
		return "<nil>"
	}
	return r.Text
}
