//go:build !race

package decodebench

const raceEnabled = false
