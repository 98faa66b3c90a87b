//go:build race

package decodebench

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// code that is allocation-free through a pool (purego's calls into the
// driver) allocates under it.
const raceEnabled = true
