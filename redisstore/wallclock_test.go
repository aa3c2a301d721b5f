package redisstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
)

// TestOutageWindowOnTheMonotonicClock: Store.do keeps the end of an
// outage's fail-fast window as time.Now().UnixNano() + Probe and compares
// it with time.Now().UnixNano(): wall-clock integers. If the wall clock
// steps back by D during an outage (NTP step, VM resume), every operation
// keeps failing at once, without probing, for D + Probe instead of Probe:
// a fail-closed limiter refuses every call, retries stay on local shares
// and effects run nothing, for as long as the step, on that one instance,
// while Redis is healthy. (A forward step only probes early.) The process
// clock cannot be stepped in a test, so this checks store.go's source.
func TestOutageWindowOnTheMonotonicClock(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "store.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "UnixNano" {
			return true
		}
		if inner, ok := sel.X.(*ast.CallExpr); ok {
			if s, ok := inner.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "Now" {
				if id, ok := s.X.(*ast.Ident); ok && id.Name == "time" {
					t.Errorf("store.go:%d: time.Now().UnixNano() times the outage on the wall clock", fs.Position(sel.Pos()).Line)
				}
			}
		}
		return true
	})
}
