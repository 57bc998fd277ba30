//go:build race

package storage

// raceEnabled is set when the tests run under the race detector, which
// makes the largest tests too slow.
const raceEnabled = true
