// Command capabilities-desktop is the hub's desktop app: it lives in the
// tray, serves the hub's MCP endpoint (agents' `serve --stdio` relay to
// it), raises a notification for every call waiting for a person and for
// every server an agent's config gained, and opens the console. Without a display it exits 2 (run `capabilities hub serve`).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/capabilities-sh/capabilities/app"
)

// The window system (GTK, Cocoa) wants its loop on the process's main
// thread: keep main there.
func init() { runtime.LockOSThread() }

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: capabilities-desktop (no arguments; the hub is $CAPABILITIES_HOME/hub, default ~/.capabilities/hub)")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, app.Options{Logger: log, Stderr: os.Stderr})
	stop()
	switch {
	case errors.Is(err, app.ErrRestart):
		// A new hub was set up in place of one deleted: the app starts
		// again on it, as a new process (its tray, its bus name, its
		// endpoint all new).
		fmt.Fprintln(os.Stderr, "capabilities-desktop:", err)
		if err := restart(); err != nil {
			fmt.Fprintln(os.Stderr, "capabilities-desktop: starting again:", err, "(start the app again)")
			os.Exit(1)
		}
	case errors.Is(err, app.ErrNoDisplay):
		fmt.Fprintln(os.Stderr, "capabilities-desktop:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "capabilities-desktop:", err)
		os.Exit(1)
	}
}

// restart replaces this process with a new run of the app (where the
// system has no exec, it starts one and this one exits).
func restart() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := syscall.Exec(exe, os.Args, os.Environ()); err == nil || runtime.GOOS != "windows" {
		return err
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Start()
}
