//go:build race

package sandbox

// raceDetector is set when the tests run under -race, whose shadow memory
// grows with every goroutine and allocation: RSS says nothing then.
const raceDetector = true
