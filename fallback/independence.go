package fallback

import "github.com/portico-llm/portico"

// independent reports whether a fallback with capabilities f meets the
// requirement against the primary p. Unknown (empty) fields exclude nothing.
func independent(req Independence, p, f *portico.Capabilities) bool {
	sameProvider := p.Provider != "" && p.Provider == f.Provider
	switch req {
	case OtherProvider:
		return !sameProvider
	case OtherRegion:
		return !sameProvider || p.Region == "" || p.Region != f.Region
	}
	return true
}
