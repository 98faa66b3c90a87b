//go:build race

package reconcile

// raceEnabled says this binary runs with the race detector, whose shadow
// memory is a part of its own.
const raceEnabled = true
