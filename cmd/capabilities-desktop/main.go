// Command capabilities-desktop is the hub's desktop app: it lives in the
// tray, serves the hub's MCP endpoint (agents' `serve --stdio` relay to
// it), raises a notification for every call waiting for a person and for
// every server an agent's config gained, and opens the console. Without a display it exits 2 (run `capabilities hub serve`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/capabilities-sh/capabilities/app"
)

// The window system (GTK, Cocoa) wants its loop on the process's main
// thread: keep main there.
func init() { runtime.LockOSThread() }

func main() {
	opts, code, done := parse(os.Args[1:], os.Stdout, os.Stderr)
	if done {
		os.Exit(code)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(os.Getenv("CAPABILITIES_LOG"))}))
	opts.Logger, opts.Stderr = log, os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := app.Run(ctx, opts)
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

// flags are the app's command-line flags; each one's usage is its line in
// --help (TestHelpNamesEveryFlag holds every flag to having one).
func flags(opts *app.Options) *flag.FlagSet {
	fs := flag.NewFlagSet("capabilities-desktop", flag.ContinueOnError)
	fs.IntVar(&opts.Port, "port", app.DefaultPort, "the loopback port `N` of the hub's MCP endpoint (127.0.0.1); if it is taken: the next 9, then any free port, announced in $CAPABILITIES_HOME/hub/endpoint.json")
	return fs
}

// parse reads the command line. done says the process ends now with code:
// the help was asked for (0, on stdout) or the command line is wrong (2,
// on stderr).
func parse(args []string, stdout, stderr io.Writer) (opts app.Options, code int, done bool) {
	fs := flags(&opts)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		help(stdout, fs)
		return opts, 0, true
	case err != nil:
		fmt.Fprintf(stderr, "capabilities-desktop: %v\n%s", err, shortUsage)
		return opts, 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "capabilities-desktop: unexpected argument %q: the app takes flags only\n%s", fs.Arg(0), shortUsage)
		return opts, 2, true
	case opts.Port < 1 || opts.Port > 65535:
		fmt.Fprintf(stderr, "capabilities-desktop: --port %d is not a TCP port (1-65535)\n%s", opts.Port, shortUsage)
		return opts, 2, true
	}
	return opts, 0, false
}

const shortUsage = "usage: capabilities-desktop [--port N]   (capabilities-desktop --help says more)\n"

// help is the text of --help: what the app is, how it is started, its
// flags (from fs), the environment it reads and its exit codes.
func help(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	b.WriteString(`capabilities-desktop: the capabilities hub's desktop app.

It lives in the tray and is the long-running hub of $CAPABILITIES_HOME/hub
(default ~/.capabilities/hub), the same store the ` + "`capabilities`" + ` CLI uses:
  - it serves the hub's MCP endpoint on 127.0.0.1 (bearer token in hub/http-token);
    each agent's ` + "`capabilities hub serve --stdio`" + ` relays its session there,
    so every agent shares one set of upstream servers;
  - it raises a notification for every call that waits for a person (Allow once,
    Deny, Open), and opens the approval window (capabilities-window, beside this
    binary; the browser where there is none) for the details;
  - it opens the review window (the console) for sources to add and decisions
    to make, from the tray menu;
  - it watches the agents' MCP configs (Claude Code, Codex, Cursor, Gemini, ...)
    and offers every server one of them gains: Add, or Not now;
  - Pause in the tray makes every call ask; Start at login starts it with the session.
Nothing here approves anything by itself: only a person's click records a decision.

Start it from the desktop's menu, or in a terminal of a graphical session:
  capabilities-desktop &
One app runs per hub: a second launch shows the first one's window and exits 0.
Without a graphical session, run the hub as ` + "`capabilities hub serve --http`" + `
instead (the same endpoint, no tray). Quit from the tray, or send SIGTERM or
SIGINT: the endpoint's announcement is removed and agents' sessions fall back to
their own engine.

Usage:
  capabilities-desktop [flags]

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(&b, "%s\n      %s", line, usage)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %s)", f.DefValue)
		}
		b.WriteString("\n")
	})
	b.WriteString(`  -h, --help
      this text

Environment:
  CAPABILITIES_HOME        the hub's folder is $CAPABILITIES_HOME/hub (default ~/.capabilities)
  DISPLAY, WAYLAND_DISPLAY the graphical session; with neither set the app exits 2
  DBUS_SESSION_BUS_ADDRESS the session bus: tray, notifications, one app per hub
  NO_KEYRING               set: credentials in the mode-600 file, not the OS keychain
  CAPABILITIES_BROWSER     the command that opens a page (then $BROWSER, then xdg-open/open)
  BROWSER                  the browser, when CAPABILITIES_BROWSER is unset
  CAPABILITIES_NO_BROWSER  1: never open a browser
  CAPABILITIES_CACHE_DIR   where the sandbox's compiled QuickJS is kept (default the user cache dir)
  CAPABILITIES_LOG         debug, info (default), warn or error: what the log on stderr shows
  XDG_CONFIG_HOME          Start at login writes $XDG_CONFIG_HOME/autostart/capabilities.desktop
                           (default ~/.config; Linux and the BSDs)

Exit codes:
  0  quit from the tray, SIGTERM or SIGINT, or a second launch that showed the first app
  1  the app could not run: another app holds this hub (its pid named), the hub
     could not be opened, or starting again on a new hub failed
  2  no graphical session (DISPLAY and WAYLAND_DISPLAY unset), or a wrong command line
`)
	_, _ = io.WriteString(w, b.String())
}

// logLevel is CAPABILITIES_LOG's level; info when it is unset or unknown.
func logLevel(v string) slog.Level {
	switch strings.ToLower(v) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
