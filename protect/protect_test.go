package protect

import (
	"errors"
	"testing"

	"go.uber.org/goleak"

	"github.com/portico-llm/portico"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each mistake of a Config is refused by Validate, before any request,
// with a Permanent *portico.Error naming the field; a good Config passes.
func TestValidate(t *testing.T) {
	const base = "https://api.example.com/v1/"
	for _, c := range []struct {
		name string
		cfg  Config
		want string // Reason; "" for nil
	}{
		{"zero", Config{}, ""},
		{"replicas", Config{BaseURL: base, Replicas: []Replica{{Name: "b", BaseURL: "https://b.example.com/v1/"}}}, ""},
		{"negative gap", Config{ChunkGap: -1}, "protect: negative Config.ChunkGap -1ns"},
		{"no base", Config{Replicas: []Replica{{Name: "b", BaseURL: base}}}, "protect: Config.Replicas need the client's absolute Config.BaseURL"},
		{"relative base", Config{BaseURL: "/v1/", Replicas: []Replica{{Name: "b", BaseURL: base}}}, "protect: Config.Replicas need the client's absolute Config.BaseURL"},
		{"no name", Config{BaseURL: base, Replicas: []Replica{{BaseURL: base}}}, "protect: a Replica needs a Name and an absolute BaseURL"},
		{"bad replica URL", Config{BaseURL: base, Replicas: []Replica{{Name: "b", BaseURL: "b.example.com"}}}, "protect: a Replica needs a Name and an absolute BaseURL"},
		{"primary", Config{BaseURL: base, Replicas: []Replica{{Name: "primary", BaseURL: base}}}, `protect: Replica name primary is "primary" or not unique`},
		{"twice", Config{BaseURL: base, Replicas: []Replica{{Name: "b", BaseURL: base}, {Name: "b", BaseURL: base}}}, `protect: Replica name b is "primary" or not unique`},
	} {
		err := c.cfg.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v, want nil", c.name, err)
			}
			continue
		}
		var pe *portico.Error
		if !errors.As(err, &pe) || pe.Class != portico.Permanent || !pe.NotSent || pe.Reason != c.want {
			t.Errorf("%s: Validate() = %#v, want Permanent, NotSent, Reason %q", c.name, err, c.want)
		}
	}
}
