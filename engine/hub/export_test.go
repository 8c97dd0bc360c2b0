package hub

import "testing"

// SetOneCall switches the one-call path (oneCallRun) for the test.
func SetOneCall(t testing.TB, on bool) {
	old := oneCallOff.Load()
	oneCallOff.Store(!on)
	t.Cleanup(func() { oneCallOff.Store(old) })
}

// OneCallRuns is how many attempts took the one-call path so far.
func OneCallRuns() int64 { return oneCallRuns.Load() }
