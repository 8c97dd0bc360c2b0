//go:build desktop

// Command capabilities-window is the desktop app's window: the console's
// screens in a Wails window (WebKitGTK 4.1 on Linux), over the shared
// store. capabilities-desktop starts it beside itself while a window is
// open and tells it on stdin what to show; it ends when the window is
// closed. The only cgo binary: build it with
// go build -tags desktop,production,webkit2_41 (scripts/setup.sh does).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/capabilities-sh/capabilities/app/window"
)

// The window system (GTK, Cocoa) wants its loop on the process's main
// thread: keep main there.
func init() { runtime.LockOSThread() }

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--check" {
		// The libraries loaded: the window can open (the app asks first).
		fmt.Println("capabilities-window: ok")
		return
	}
	if len(os.Args) == 2 && (os.Args[1] == "--help" || os.Args[1] == "-h" || os.Args[1] == "-help") {
		fmt.Print(helpText)
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: capabilities-window [--check] (capabilities-desktop starts it and tells it on stdin what to show; --help says more)")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("process", "window")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := window.Run(ctx, log)
	stop()
	switch {
	case errors.Is(err, window.ErrNoDisplay):
		fmt.Fprintln(os.Stderr, "capabilities-window:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "capabilities-window:", err)
		os.Exit(1)
	}
}
