package sandbox

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// guestClock measures the CPU time of the OS thread that runs the guest, so
// that a compute budget counts the guest's work and not the time the machine
// spent on other processes: on a loaded machine a memory bomb must still
// reach the memory limit, not run out of compute first. The goroutine is
// locked to its thread until stop.
type guestClock struct {
	clock int32 // the thread's CPU-time clock, readable from any thread of the process
	start time.Duration
	wall  time.Time // fallback when the clock cannot be read
	ok    bool
}

func startGuestClock() *guestClock {
	runtime.LockOSThread()
	// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) from the kernel's posix-timers.h.
	c := &guestClock{clock: int32(^unix.Gettid()<<3 | 6), wall: time.Now()}
	c.start, c.ok = c.read()
	return c
}

func (c *guestClock) read() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(c.clock, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// used is the guest's CPU time since start; it may be called from any goroutine.
func (c *guestClock) used() time.Duration {
	if c.ok {
		if now, ok := c.read(); ok {
			return now - c.start
		}
	}
	return time.Since(c.wall)
}

// stop unlocks the thread and returns the CPU time used.
func (c *guestClock) stop() time.Duration {
	d := c.used()
	runtime.UnlockOSThread()
	return d
}
