//go:build race

package validate

// raceEnabled is true under -race, whose instrumentation allocates.
const raceEnabled = true
