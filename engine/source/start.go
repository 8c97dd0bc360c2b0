package source

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/scrub"
)

// StartStatus says how the start of a stdio upstream is going, for a
// person waiting on it: Options.OnStart receives one about every second
// until the server answers the MCP handshake or the start fails.
type StartStatus struct {
	Command string        // the command line as shown (credentials masked)
	Elapsed time.Duration // since the hub first started it
	Waiting string        // what the hub waits for, in words
	Idle    time.Duration // how long it has shown no sign of work (no output, no CPU time); 0 while it works
	Stderr  string        // the last line it wrote on stderr, credentials scrubbed
}

// DefaultStartCap is the longest the hub waits for a stdio upstream that
// keeps working at its start: past the connect timeout, a start goes on
// while the server shows signs of work (npx needed 50 s to download
// server-everything on a cold cache), up to this cap (or the connect
// timeout, when it is longer).
const DefaultStartCap = 5 * time.Minute

// startQuiet is how long a start past its connect timeout may show no sign
// of work before the hub gives up (the connect timeout when it is
// shorter).
const startQuiet = 10 * time.Second

// startCPU is the CPU time a start's process group must spend, since its
// last sign of work, to count as working: an idle server spends none.
const startCPU = 50 * time.Millisecond

// errNoDiscover ends a 2026-07-28 attempt whose server read server/discover
// and did not answer it in time: the hub falls back to 2025-11-25.
var errNoDiscover = errors.New("the server did not answer server/discover")

// input is what a start knows of the server's reading of its stdin.
type input int

const (
	inputUnknown input = iota // cannot be told (not Linux), or nothing written yet
	inputUnread               // the handshake waits in the pipe: the server is not reading yet
	inputRead                 // the server read all the hub wrote
)

// stalled is why the hub gave up on a start that did not answer.
type stalled struct {
	after time.Duration // since the start
	idle  time.Duration // with no sign of work; 0 when it was still working at the cap
	input input
}

func (s *stalled) Error() string {
	if s.idle == 0 {
		return fmt.Sprintf("it was still starting %s after it began, the longest the hub waits for a start that keeps working", Seconds(s.after.Round(time.Second)))
	}
	what := map[input]string{
		inputUnknown: "it had not answered",
		inputUnread:  "it had not read it yet",
		inputRead:    "it had read it and not answered",
	}[s.input]
	return fmt.Sprintf("%s after its start %s, with no sign of work (no output, no CPU time) for the last %s", Seconds(s.after.Round(time.Second)), what, Seconds(s.idle.Round(time.Second)))
}

// startWatch governs the start of a stdio upstream, over its attempts (a
// fallback to the older protocol starts it again): it ends an attempt
// whose server read server/discover and did not answer it, and the start
// when it is past the connect timeout and shows no sign of work (or is
// past the cap); it reports how the start goes to OnStart.
type startWatch struct {
	begun    time.Time
	timeout  time.Duration // the connect timeout
	discover time.Duration
	onStart  func(StartStatus)
}

func newStartWatch(opts *Options) *startWatch {
	return &startWatch{begun: time.Now(), timeout: opts.connectTimeout(), discover: opts.discoverTimeout(), onStart: opts.OnStart}
}

func (w *startWatch) quiet() time.Duration { return min(startQuiet, w.timeout) }
func (w *startWatch) cap() time.Duration   { return max(DefaultStartCap, w.timeout) }

// tick is how often the start is looked at: every second, more often for
// a short connect timeout.
func (w *startWatch) tick() time.Duration {
	return min(time.Second, max(50*time.Millisecond, min(w.timeout, w.discover)/10))
}

// watch looks after one attempt of s's start until the returned stop is
// called (it returns once the watch ended). It ends the attempt through
// cancel: with errNoDiscover when discovering and the server does not
// answer server/discover in time, with a *stalled when the start stalled.
func (w *startWatch) watch(s *Session, discovering bool, cancel context.CancelCauseFunc) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		p := s.proc
		pgid := p.cmd.Process.Pid
		started := time.Now()
		lastActive, lastOut, cpuMark := started, int64(0), time.Duration(0)
		var readAt time.Time
		t := time.NewTicker(w.tick())
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-p.done:
				return // connect sees the exit
			case <-t.C:
			}
			now := time.Now()
			if out := p.stderr.size() + p.outRead.Load(); out != lastOut {
				lastOut, lastActive = out, now
			}
			if cpu := groupCPU(pgid); cpu >= 0 {
				switch {
				case cpu < cpuMark:
					cpuMark = cpu
				case cpu-cpuMark >= startCPU:
					cpuMark, lastActive = cpu, now
				}
			}
			in, canTell := inputUnknown, false
			if n := unread(p.stdin.f); n >= 0 {
				canTell = true
				switch {
				case !readAt.IsZero():
					in = inputRead
				case p.stdin.n.Load() == 0:
				case n > 0:
					in = inputUnread
				default:
					in, readAt = inputRead, now
				}
			}
			elapsed, idle := now.Sub(w.begun), now.Sub(lastActive)
			if discovering {
				// server/discover has its time from when the server read
				// it (a server still starting has not), or else from the start.
				if canTell && !readAt.IsZero() && now.Sub(readAt) >= w.discover || !canTell && now.Sub(started) >= w.discover {
					cancel(errNoDiscover)
					return
				}
			}
			if elapsed >= w.timeout && !(discovering && !readAt.IsZero()) {
				switch {
				case idle >= w.quiet():
					cancel(&stalled{after: elapsed, idle: idle, input: in})
					return
				case elapsed >= w.cap():
					cancel(&stalled{after: elapsed, input: in})
					return
				}
			}
			if w.onStart != nil {
				st := StartStatus{Command: s.src.ShownCommandLine(), Elapsed: elapsed, Waiting: waitingFor(in, s.src.Command), Stderr: s.stderrLast()}
				if idle >= 2*w.tick() {
					st.Idle = idle
				}
				w.onStart(st)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// waitingFor says what a start waits for, in words.
func waitingFor(in input, command string) string {
	switch in {
	case inputUnread:
		what := "waiting for it to read the MCP handshake"
		if fetches(command) {
			what += "; " + filepath.Base(command) + " may still be downloading the package"
		}
		return what
	case inputRead:
		return "waiting for its answer to the MCP handshake"
	}
	return "waiting for the MCP handshake"
}

// fetches reports whether a command is a package runner that downloads
// the server it runs on first use.
func fetches(command string) bool {
	switch strings.TrimSuffix(filepath.Base(command), ".cmd") {
	case "npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "bun", "uvx", "uv", "pipx", "deno":
		return true
	}
	return false
}

// stderrLast is the last line the upstream wrote on stderr (after its
// last carriage return: a progress bar's latest state), scrubbed.
func (s *Session) stderrLast() string {
	text := s.proc.stderr.last()
	if text == "" {
		return ""
	}
	v := s.secrets()
	if s.src.SecretEnv != "" {
		v = append(v, s.src.Env[s.src.SecretEnv])
	}
	return scrub.New(v...).String(text)
}
