//go:build race

package gateway_test

// raceDetector says the tests run under the race detector, which makes
// the process several times slower: tests that push data at a rate ask
// for less under it.
const raceDetector = true
