// Package bench compares Portico's pipelines and layers with reference
// libraries on the happy path, in ns/op and allocs/op, in one run. It is a
// module of its own, so that the library's go.mod does not carry the
// comparison libraries (failsafe-go, sony/gobreaker/v2, the OpenTelemetry
// SDK) nor the provider adapters' SDKs, and its benchmarks run only when
// asked for (go test -bench).
//
// BenchmarkGoals measures the preset over each real SDK's adapter (an
// in-memory fake of modeltest) against the bare SDK call, per streamed
// chunk against the bare adapter, and against failsafe-go's pipeline, the
// calls compared in turn in one run.
//
// BenchmarkTable is the table of README.md: the bare call, six no-op
// layers, the hand-built chain, the preset (stack.New) without a
// deadline, with its own, with the caller's and with a recording
// OpenTelemetry SDK tracer, failsafe-go's four- and five-policy pipelines
// with the same settings, the preset and failsafe-go under b.RunParallel,
// and single layers beside their references (gobreaker, x/time/rate,
// santhosh-tekuri/jsonschema). table.sh runs it with -count and prints
// benchstat's summary and the ratios (cmd/ratios):
//
//	bench/table.sh
//
// BenchmarkTenants measures admission through a per-client limiter among a
// thousand, a hundred thousand and a million live client keys;
// BenchmarkStream each layer that watches a stream; BenchmarkBreakerClosed
// and BenchmarkFallbackFirstRoute single layers. On a loaded machine
// wall-clock ns/op swing with the load between sub-benchmarks: the table
// and BenchmarkStream also report the locked thread's CPU time per call
// (cpu-ns/op), and BenchmarkPairedCPU (Linux) runs the happy paths in
// alternating blocks on one locked thread:
//
//	go -C bench test -run XXX -bench PairedCPU -benchtime=300ms ./...
package bench
