package portico

import "context"

type progressKey struct{}

// ContextWithProgress returns a copy of ctx that carries f, a signal that a
// streamed answer is advancing even when no chunk reaches the layer that
// installed it: a layer that holds chunks back from its caller calls
// [Progress] for each one, and f receives the chunk, for the stream's rate
// as well as its liveness. Progress is liveness only: it says nothing
// reached the caller, so it never blocks a retry as a delivered chunk does.
// When ctx already carries a function, the new one calls f and then the
// outer one, so nested layers each see the progress. f must be safe for
// concurrent use and quick. The package doc ("Streams") says who installs
// and who calls it.
func ContextWithProgress(ctx context.Context, f func(Chunk)) context.Context {
	if outer, ok := ctx.Value(progressKey{}).(func(Chunk)); ok {
		inner := f
		f = func(c Chunk) { inner(c); outer(c) }
	}
	return context.WithValue(ctx, progressKey{}, f)
}

// Progress reports that chunk c of a streamed answer arrived at a layer that
// holds it back from its caller. It calls the function installed with
// [ContextWithProgress], if any; without one it does nothing.
func Progress(ctx context.Context, c Chunk) {
	if f, ok := ctx.Value(progressKey{}).(func(Chunk)); ok {
		f(c)
	}
}
