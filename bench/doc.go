// Package bench compares Portico's layers with reference libraries on the happy
// path, in ns/op and allocs/op, in one run:
//
//	go -C bench test -run XXX -bench . -benchtime=200ms ./...
//
// It is a module of its own so that the library's go.mod does not carry the
// comparison libraries (sony/gobreaker/v2). BenchmarkBreakerClosed measures a
// closed breaker around a Model that answers at once; BenchmarkFallbackFirstRoute
// a fallback group whose first route answers. Each has the bare call as its
// baseline; the overhead of a layer is its ns/op minus the bare call's.
//
// On a loaded machine wall-clock ns/op swing with the load between
// sub-benchmarks; BenchmarkPairedCPU (Linux) runs the same happy paths in
// alternating blocks on one locked thread and reports each in thread CPU time,
// which stays comparable:
//
//	go -C bench test -run XXX -bench PairedCPU -benchtime=300ms ./...
package bench
