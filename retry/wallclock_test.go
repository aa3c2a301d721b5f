package retry

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestStreamWatchdogReadsTheMonotonicClock: the chunk-gap watchdog stamps
// each chunk with time.Now().UnixNano() and measures the gap with
// time.Since(time.Unix(0, last)). Neither value carries a monotonic
// reading, so the gap is measured on the wall clock: an NTP step or a VM
// resume that moves the wall clock forward by the gap timeout while a
// healthy stream runs makes the watchdog stall it (ErrChunkGapTimeout
// after chunks were delivered: no retry, the request fails), and a step
// back by D hides a real stall for up to D. The rate floor's hold times
// are measured the same way. ARCHITECTURE.md says layers that time a call
// read the monotonic clock alone (internal/mono). The process clock cannot
// be stepped in a test, so this checks the source: stream.go must not time
// with wall-clock integers.
func TestStreamWatchdogReadsTheMonotonicClock(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "stream.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if sel.Sel.Name == "UnixNano" {
			if inner, ok := sel.X.(*ast.CallExpr); ok {
				if s, ok := inner.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Now" {
					if id, ok := s.X.(*ast.Ident); ok && id.Name == "time" {
						t.Errorf("stream.go:%d: time.Now().UnixNano() times the stream on the wall clock; use mono.Now()", fs.Position(call.Pos()).Line)
					}
				}
			}
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && sel.Sel.Name == "Unix" {
			t.Errorf("stream.go:%d: time.Unix(...) rebuilds a wall-clock time to measure a gap; use mono.Now()", fs.Position(call.Pos()).Line)
		}
		return true
	})
}
