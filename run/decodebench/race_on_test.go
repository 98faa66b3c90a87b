//go:build race

package decodebench

// raceEnabled: the race detector adds allocations of its own to code
// that is allocation-free without it (sync.Pool drops items at random).
const raceEnabled = true
