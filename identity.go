package portico

import "context"

type identityKey struct{}

// WithIdentity returns a copy of ctx that carries id, for the calls that
// do not go through a [Request] of their own: an SDK's requests through an
// adapter's guard (its Protect option) and the framework bridges
// (bridge/langchaingo, bridge/eino) make their requests' Identity from it.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the Identity ctx carries ([WithIdentity]), or the
// zero Identity.
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}
