package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if child() {
		return
	}
	goleak.VerifyTestMain(m)
}
