//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestAddStatusLineOnTerminal: while a local server is slow to start (npx
// downloading a package on a cold cache, played by slow-start.mjs behind a
// script named npx), `hub add` shows a status line on stderr when stderr is
// a terminal (a pseudo-terminal here), rewritten in place: how long, what it
// waits for, the server's last stderr line; the line is cleared once the
// server answered, and nothing of it goes to stdout. add_slow_start.txtar
// checks the plain lines when stderr is not a terminal.
func TestAddStatusLineOnTerminal(t *testing.T) {
	e := newCLIEnv(t)
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nexec %s %s\n", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "slow-start.mjs"))
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	timeout := testenv.Timeout(time.Second)
	cmd := e.command("hub", "add", "--yes", "--env", "SLOW_START_MS="+strconv.FormatInt(2*timeout.Milliseconds(), 10), "--", "npx", "-y", "slow-server")
	cmd.Env = append(cmd.Env, "CAPABILITIES_CONNECT_TIMEOUT="+timeout.String(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tty, term := openPTY(t)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, term
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	term.Close()
	shown := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(tty) // EIO once the command and its children closed the terminal
		shown <- b
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(testenv.Timeout(60 * time.Second)):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("hub add still running; killed")
	}
	var out string
	select {
	case b := <-shown:
		out = string(b)
	case <-time.After(testenv.Timeout(10 * time.Second)):
		t.Fatal("the terminal is still open after hub add exited: something it started still holds it")
	}
	t.Logf("the terminal showed:\n%q", out)
	if err != nil {
		t.Fatalf("hub add: %v\nstdout:\n%s\nterminal:\n%q", err, stdout.String(), out)
	}
	if !strings.Contains(stdout.String(), "Added scripted with 3 tools") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	for _, want := range []string{
		"\r\x1b[Kstarting npx -y slow-server: ",
		" s, waiting for it to read the MCP handshake; npx may still be downloading the package · fetching package-",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the terminal did not show %q:\n%q", want, out)
		}
	}
	if strings.LastIndex(out, "\r\x1b[K") <= strings.LastIndex(out, "\r\x1b[Kstarting") {
		t.Errorf("the status line was not cleared:\n%q", out)
	}
	if strings.Contains(out, "capabilities: starting") {
		t.Errorf("plain status lines on a terminal:\n%q", out)
	}
	if strings.Contains(stdout.String(), "starting npx") || strings.Contains(stdout.String(), "\x1b") {
		t.Errorf("the status went to stdout:\n%q", stdout.String())
	}
}

// openPTY opens a pseudo-terminal: its controlling side, and the terminal
// a command writes to (200 columns wide).
func openPTY(t testing.TB) (tty, term *os.File) {
	t.Helper()
	tty, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	if err := unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(tty.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 200}); err != nil {
		t.Fatalf("sizing the pseudo-terminal: %v", err)
	}
	return tty, term
}
