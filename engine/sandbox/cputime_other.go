//go:build !linux

package sandbox

import "time"

// guestClock measures wall time where a thread's CPU time cannot be read.
type guestClock struct{ wall time.Time }

func startGuestClock() *guestClock { return &guestClock{wall: time.Now()} }

func (c *guestClock) used() time.Duration { return time.Since(c.wall) }

func (c *guestClock) stop() time.Duration { return c.used() }
