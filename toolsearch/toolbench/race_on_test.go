//go:build race

package toolbench

// raceDetector is set when the tests run under -race, whose instrumentation
// makes timings meaningless.
const raceDetector = true
