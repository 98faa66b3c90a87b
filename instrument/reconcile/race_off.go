//go:build !race

package reconcile

// raceEnabled says this binary runs with the race detector.
const raceEnabled = false
