package guard

import (
	"context"
	"regexp"

	"github.com/portico-llm/portico"
)

// MaxBytes returns a Check that refuses a request larger than n bytes of
// [portico.Request.Size], by rule "max_bytes".
func MaxBytes(n int) Check {
	return func(_ context.Context, req *portico.Request) error {
		if req.Size() > n {
			return Deny("max_bytes")
		}
		return nil
	}
}

// Pattern returns a Check that refuses a request when re matches the text
// of one of its user or tool messages (each text part alone), by rule:
// a deny-list. The rule names the pattern; the text that matched is never
// said.
func Pattern(rule string, re *regexp.Regexp) Check {
	return func(_ context.Context, req *portico.Request) error {
		for i := range req.Messages {
			m := &req.Messages[i]
			if m.Role != portico.RoleUser && m.Role != portico.RoleTool {
				continue
			}
			for _, p := range m.Content {
				if p.Kind == portico.PartText && re.MatchString(p.Text) {
					return Deny(rule)
				}
			}
		}
		return nil
	}
}
