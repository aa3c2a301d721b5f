// Package enum is the one way Portico's enums name their values: a table
// of names indexed by value, and "Type(n)" for a value it does not name.
package enum

import "strconv"

// Integer is the underlying type of an enum.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Name returns names[v], or typ+"(v)" when v is outside names or names
// it "".
func Name[T Integer](names []string, v T, typ string) string {
	if uint64(v) < uint64(len(names)) && names[v] != "" { // a negative v converts past len(names)
		return names[v]
	}
	return typ + "(" + strconv.FormatInt(int64(v), 10) + ")"
}
