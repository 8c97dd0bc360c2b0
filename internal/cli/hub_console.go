package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/internal/browser"
	"github.com/spf13/cobra"
)

func newConsoleCmd(e *env) *cobra.Command {
	var (
		runID string
		port  int
	)
	c := &cobra.Command{
		Use:   "console [--run RUN_ID] [--port PORT]",
		Short: "Open the hub's screens in a browser to approve pending calls",
		Long: `Serve the console on loopback (127.0.0.1, a free port unless --port) and open it in a
browser with a one-time link: the calls waiting for a decision, one at a time, with
once, run, always and deny (keys o, r, a, d; Enter is once; Esc closes). The agent
continues the run with execute({resume}).

The link works once: opening it sets a session cookie for that browser only; a second
use is refused. The page answers only this machine, and only its own origin. With
--run it is about that run alone and stops when the run's pending calls expire;
without, it works for 24 hours or until stopped (Ctrl-C).

The browser is CAPABILITIES_BROWSER if set, else $BROWSER, else the system's opener
(xdg-open, open); CAPABILITIES_NO_BROWSER=1 only prints the link.`,
		Example: `  capabilities hub console
  capabilities hub console --run r0123abcd
  CAPABILITIES_NO_BROWSER=1 capabilities hub console --port 4791`,
		Args:              exactArgs(0, "no arguments (pass the run with --run)"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(c *cobra.Command, args []string) error {
			if port < 0 || port > 65535 {
				return usagef("--port %d: pass 1 to 65535, or 0 for a free port", port)
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			ctx := c.Context()
			var expires time.Time
			if runID != "" {
				eng, err := h.Runs()
				if err != nil {
					return err
				}
				r, err := eng.Get(ctx, runID)
				if err != nil {
					return err
				}
				open := 0
				for _, p := range r.Pending {
					if p.AwaitsDecision() {
						open++
						if p.ExpiresAt.After(expires) {
							expires = p.ExpiresAt
						}
					}
				}
				if !r.Status.Paused() || open == 0 {
					return fmt.Errorf("run %s is %s: no call of it waits for a decision", runID, r.Status)
				}
				if !expires.IsZero() && !expires.After(time.Now()) {
					return fmt.Errorf("run %s: its pending call(s) expired at %s and can no longer be decided; the agent can run its code again to ask again", runID, expires.Local().Format("2006-01-02 15:04"))
				}
			}
			ln, err := console.Listen(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return err
			}
			defer ln.Close()
			g, err := console.NewGuard(console.New(h, console.Options{Logger: e.log, Run: runID}), ln.Addr().String(), console.GuardOptions{Expires: expires, Logger: e.log})
			if err != nil {
				return err
			}
			link, err := g.Link()
			if err != nil {
				return err
			}
			opened := ""
			if err := browser.Open(link); err == nil {
				opened = " (opened in your browser)"
			} else if !errors.Is(err, browser.ErrOff) && !errors.Is(err, browser.ErrNoDisplay) {
				e.log.Warn("could not open a browser; open the link yourself", "err", err)
			}
			fmt.Fprintf(e.stdout, "Console: %s%s\n", link, opened)
			fmt.Fprintf(e.stdout, "The link works once. The page works until %s; Ctrl-C stops it.\n", g.Expires().Local().Format("2006-01-02 15:04"))
			sctx, cancel := context.WithDeadline(ctx, g.Expires())
			defer cancel()
			if err := console.Serve(sctx, ln, g); err != nil {
				return err
			}
			if ctx.Err() == nil {
				fmt.Fprintln(e.stdout, "The console expired.")
			}
			return nil
		},
	}
	c.Flags().StringVar(&runID, "run", "", "show and decide only the run `RUN_ID`; the page stops when its pending calls expire")
	c.Flags().IntVar(&port, "port", 0, "the loopback `PORT` to serve on (0: a free one)")
	_ = c.RegisterFlagCompletionFunc("run", complete(runIDs(awaitingDecision)))
	return c
}
