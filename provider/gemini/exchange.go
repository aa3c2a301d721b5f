package gemini

import (
	"errors"
	"net/http"

	"github.com/portico-llm/portico/provider/internal/adapt"
)

// transport is the RoundTripper the Model installs under the SDK's HTTP
// client: it records the exchange of the call whose context carries one and
// bounds the body it reads (package adapt). Requests without an exchange
// pass through.
type transport struct{ base http.RoundTripper }

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	x := adapt.Carried(r.Context())
	if x == nil {
		return t.base.RoundTrip(r)
	}
	return x.Watch(t.base.RoundTrip(x.Begin(r)))
}

// CloseIdleConnections passes the call on, so that the SDK client's
// CloseIdleConnections reaches the real transport.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// ErrTooLarge is the cause of [portico.InvalidResponse] errors for a response
// body longer than [Config.MaxResponseBytes]: the adapter stopped reading it
// and closed the connection.
var ErrTooLarge = errors.New("gemini: response larger than MaxResponseBytes")
