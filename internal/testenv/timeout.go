package testenv

import (
	"os"
	"strconv"
	"time"
)

// ScaleEnv names the environment variable that multiplies every test
// timeout (a positive number, e.g. 2 or 0.5).
const ScaleEnv = "CAPABILITIES_TEST_TIMEOUT_SCALE"

// DefaultScale is the factor when ScaleEnv is unset. Bases passed to Timeout
// are what an idle machine needs with some margin; the factor makes them hold
// on a loaded one (a load average of 40 on 2 cores starts node 15× slower).
const DefaultScale = 3

// Timeout scales d by ScaleEnv (DefaultScale when unset). Every deadline a
// test sets goes through it: waits, handshake and connect timeouts, limits
// of runs. A timeout bounds how long a test waits; it is never what the test
// asserts, so a generous one costs nothing when things work.
func Timeout(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Scale is the factor Timeout applies. An unusable ScaleEnv panics with a
// message saying what to write: a silent default would hide the mistake.
func Scale() float64 {
	v := os.Getenv(ScaleEnv)
	if v == "" {
		return DefaultScale
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		panic(ScaleEnv + "=" + strconv.Quote(v) + ": write a positive number such as 2 or 0.5")
	}
	return f
}
