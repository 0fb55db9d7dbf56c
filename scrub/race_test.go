//go:build race

package scrub

// raceEnabled lets the slowest tests scan a sample of their input under the race
// detector, which runs code ten times slower or more.
const raceEnabled = true
