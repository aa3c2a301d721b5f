package guard

import (
	"context"
	"regexp"
	"slices"

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
			if (m.Role == portico.RoleUser || m.Role == portico.RoleTool) && matches(re, m.Content) {
				return Deny(rule)
			}
		}
		return nil
	}
}

// matches reports whether re matches one text part of parts, each alone.
func matches(re *regexp.Regexp, parts []portico.Part) bool {
	return slices.ContainsFunc(parts, func(p portico.Part) bool { return p.Kind == portico.PartText && re.MatchString(p.Text) })
}
