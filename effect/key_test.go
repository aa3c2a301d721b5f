package effect

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/portico-llm/portico"
)

func mustKey(t *testing.T, op, tool, args string) Key {
	t.Helper()
	k, err := NewKey(op, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("NewKey(%q, %q, %s) = %v", op, tool, args, err)
	}
	return k
}

func TestKeyCanonicalization(t *testing.T) {
	base := mustKey(t, "op-1", "charge", `{"b":1,"a":2}`)
	for _, same := range []string{
		`{"a":2,"b":1}`,
		" {\n \"a\" : 2 ,\t\"b\": 1 } ",
		`{"a":2.0,"b":1e0}`,
		`{"\u0061":2,"b":1}`,
	} {
		if k := mustKey(t, "op-1", "charge", same); k != base {
			t.Errorf("NewKey(%s) = %s, want %s as for {\"b\":1,\"a\":2}", same, k, base)
		}
	}
	for _, other := range []struct{ op, tool, args string }{
		{"op-2", "charge", `{"a":2,"b":1}`},
		{"op-1", "refund", `{"a":2,"b":1}`},
		{"op-1", "charge", `{"a":2,"b":1.5}`},
		{"op-1", "charge", `{"a":"2","b":1}`},
		{"op-1", "charge", `[{"a":2,"b":1}]`},
	} {
		if k := mustKey(t, other.op, other.tool, other.args); k == base {
			t.Errorf("NewKey(%q, %q, %s) = %s, same as the base key", other.op, other.tool, other.args, k)
		}
	}
	// Length prefixes keep the parts apart.
	if a, b := mustKey(t, "a/b", "c", `{}`), mustKey(t, "a", "b/c", `{}`); a == b {
		t.Errorf("NewKey(a/b, c) == NewKey(a, b/c) = %s", a)
	}
	const want = "4:op-1/6:charge/"
	if string(base[:len(want)]) != want || len(base) != len(want)+64 {
		t.Errorf("key = %s, want prefix %s and a 64-hex-digit hash", base, want)
	}
}

func TestKeyErrors(t *testing.T) {
	if _, err := NewKey("", "t", json.RawMessage(`{}`)); !errors.Is(err, ErrOperation) || portico.ClassOf(err) != portico.Permanent {
		t.Errorf("NewKey with no operation = %v, want permanent ErrOperation", err)
	}
	for _, bad := range []string{``, `{`, `{"a":1,"a":2}`, `{"a":1}x`} {
		if _, err := NewKey("op", "t", json.RawMessage(bad)); !errors.Is(err, ErrArguments) {
			t.Errorf("NewKey(args %q) = %v, want ErrArguments", bad, err)
		}
	}
	// One line: the canonicalizer's cause follows after "; ".
	_, err := NewKey("op", "t", json.RawMessage(`{`))
	if want := "portico: permanent: tool arguments not canonicalizable: effect: tool arguments are not valid JSON; Unexpected EOF reached"; err == nil || err.Error() != want {
		t.Errorf("NewKey(args {) = %q, want %q", err, want)
	}
	k1, _ := KeyOf("op", portico.ToolCall{ID: "x", Name: "t", Arguments: json.RawMessage(`{"q":1}`)})
	k2 := mustKey(t, "op", "t", `{"q":1}`)
	if k1 != k2 {
		t.Errorf("KeyOf = %s, want %s", k1, k2)
	}
}

func FuzzNewKey(f *testing.F) {
	f.Add(`{"b":1,"a":2}`)
	f.Add(`[1, 2.50, "x\u00e9"]`)
	f.Fuzz(func(t *testing.T, args string) {
		k, err := NewKey("op", "t", json.RawMessage(args))
		if err != nil {
			return
		}
		// Re-encoding the value must give the same key.
		var v any
		if json.Unmarshal([]byte(args), &v) != nil {
			return // jcs accepted what encoding/json refuses: nothing to compare.
		}
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		if k2, err := NewKey("op", "t", b); err == nil && k2 != k {
			t.Fatalf("NewKey(%q) = %s but NewKey(re-encoded %s) = %s", args, k, b, k2)
		}
	})
}

// TestStepKeySplits: StepKey length-prefixes each part, so the same
// characters split otherwise make another key, and a tenant put first
// keeps two tenants' same operation apart (the package doc's advice).
func TestStepKeySplits(t *testing.T) {
	for _, c := range []struct{ a, b []string }{
		{[]string{"ab", "c", "d"}, []string{"a", "bc", "d"}},
		{[]string{"a", "b:c"}, []string{"a:b", "c"}},
		{[]string{"a", "", "b"}, []string{"a", "b", ""}},
		{[]string{"alice", "checkout-1", "charge"}, []string{"bob", "checkout-1", "charge"}},
	} {
		ka, err := StepKey(c.a[0], c.a[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := StepKey(c.b[0], c.b[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		if ka == kb {
			t.Errorf("StepKey(%q) == StepKey(%q): %q", c.a, c.b, ka)
		}
	}
}
