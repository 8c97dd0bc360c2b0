package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newExecCmd(e *env) *cobra.Command {
	var (
		file         string
		resume       string
		asJSON       bool
		wait, noWait bool
	)
	c := &cobra.Command{
		Use:   "exec '<code>' | exec --file FILE | exec -",
		Short: "Run code in the sandbox, as the model's execute does",
		Long: `Run the body of an async function in the sandbox, where each source is a global
object of async functions (await everything.echo({message: "hi"})). Prints the run's
envelope: status, result, logs, calls, and what it waits for. A call that needs a
person's approval pauses the run: decide with ` + "`capabilities hub approve <runId>`" + `,
a notification of the desktop app, or the approval page. In a terminal, exec then
waits for the decision (a status line says so; Ctrl-C leaves the run pending), goes
on with the run and prints how it ends; --no-wait returns at once, --wait waits
outside a terminal too.`,
		Example: `  capabilities hub exec 'return await everything.echo({message: "hi"})'
  capabilities hub exec --file script.js
  echo 'return 1 + 1' | capabilities hub exec -`,
		Args: func(c *cobra.Command, args []string) error {
			if resume != "" {
				if len(args) > 0 || file != "" {
					return usagef("--resume continues a run; give no code with it")
				}
				return nil
			}
			if len(args) > 1 || (len(args) == 1 && file != "") || (len(args) == 0 && file == "") {
				return usagef("exec expects the code as one argument, - to read it from standard input, or --file FILE")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if wait && noWait {
				return usagef("--wait and --no-wait: give one")
			}
			waits := wait || (!noWait && !asJSON && e.waitsByDefault())
			show := func(h *hub.Hub, env *hub.Envelope) error {
				if err := e.scrubbedOut(h.Scrubber(), asJSON, func() error { return e.printEnvelope(env, asJSON) }); err != nil || !waits || env.Status != "awaiting_approval" {
					return err
				}
				next, err := e.waitForDecision(c.Context(), h, env)
				if err != nil || next == nil {
					return err
				}
				if !asJSON {
					fmt.Fprintln(e.stdout)
				}
				return e.scrubbedOut(h.Scrubber(), asJSON, func() error { return e.printEnvelope(next, asJSON) })
			}
			if resume != "" {
				h, _, err := e.openHub()
				if err != nil {
					return err
				}
				defer h.Close()
				env, err := h.Resume(c.Context(), resume)
				if err != nil {
					return err
				}
				return show(h, env)
			}
			var src string
			switch {
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("reading the code: %w", err)
				}
				src = string(b)
			case args[0] == "-":
				b, err := io.ReadAll(e.stdin)
				if err != nil {
					return fmt.Errorf("reading the code from standard input: %w", err)
				}
				src = string(b)
			default:
				src = args[0]
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			env, err := h.Execute(c.Context(), src)
			if err != nil {
				return err
			}
			return show(h, env)
		},
	}
	c.Flags().StringVar(&file, "file", "", "read the code from `FILE`")
	c.Flags().StringVar(&resume, "resume", "", "continue the run `RUN_ID` that waited (after capabilities hub approve or hub auth), as execute({resume}) does")
	c.Flags().BoolVar(&asJSON, "json", false, "print the envelope as JSON")
	c.Flags().BoolVar(&wait, "wait", false, "when the run asks a person, wait for the decision and go on with it, also outside a terminal")
	c.Flags().BoolVar(&noWait, "no-wait", false, "when the run asks a person, return at once (the default outside a terminal)")
	_ = c.RegisterFlagCompletionFunc("resume", complete(runIDs(waitingRun)))
	return c
}

// printEnvelope shows a run's envelope; a failed run exits 1.
func (e *env) printEnvelope(env *hub.Envelope, asJSON bool) error {
	if asJSON {
		if err := e.printJSON(env); err != nil {
			return err
		}
	} else {
		w := e.stdout
		fmt.Fprintf(w, "run %s: %s\n", env.RunID, env.Status)
		for _, n := range env.Notices {
			fmt.Fprintf(w, "notice: %s\n", n)
		}
		if len(env.Result) > 0 {
			var v any
			if json.Unmarshal(env.Result, &v) == nil {
				if s, ok := v.(string); ok {
					fmt.Fprintf(w, "result:\n%s\n", s)
				} else {
					b, _ := json.MarshalIndent(v, "", "  ")
					fmt.Fprintf(w, "result:\n%s\n", b)
				}
			}
		}
		if env.Error != nil {
			fmt.Fprintf(w, "error: %s: %s\n", env.Error.Code, env.Error.Message)
			if env.Error.Hint != "" {
				fmt.Fprintf(w, "hint: %s\n", env.Error.Hint)
			}
		}
		if len(env.Logs) > 0 {
			fmt.Fprintf(w, "logs:\n  %s\n", strings.Join(env.Logs, "\n  "))
		}
		if t := env.Truncated; t != nil && (t.Result || t.Logs) {
			fmt.Fprintf(w, "truncated: result %v, logs %v (see `capabilities hub runs show %s`)\n", t.Result, t.Logs, env.RunID)
		}
		if len(env.Calls) > 0 {
			fmt.Fprintln(w, "calls:")
			for i, c := range env.Calls {
				if t := env.Truncated; t != nil && t.Calls > 0 && i == len(env.Calls)/2 {
					fmt.Fprintf(w, "  … %d more (`capabilities hub runs show %s --json` has every call)\n", t.Calls, env.RunID)
				}
				ok := "ok"
				if !c.OK {
					ok = "failed"
				}
				note := ""
				if c.Note != "" {
					note = "  (" + c.Note + ")"
				}
				fmt.Fprintf(w, "  %-40s %-6s %d ms%s\n", c.Address, ok, c.Ms, note)
			}
		}
		if len(env.Pending) > 0 {
			fmt.Fprintln(w, "waiting for a person:")
			approvals := 0
			for _, p := range env.Pending {
				fmt.Fprintf(w, "  %s  %s  %s\n      %s\n", p.ID, p.Address, visible.Line(p.Summary), visible.Line(p.Message))
				if p.Kind == model.PendingApproval || p.Kind == model.PendingInFlight {
					approvals++
				}
			}
			if approvals > 0 {
				fmt.Fprintf(w, "Decide with: capabilities hub approve %s\n", env.RunID)
			} else {
				fmt.Fprintf(w, "After storing the credential: capabilities hub exec --resume %s\n", env.RunID)
			}
		}
	}
	switch env.Status {
	case "failed", "cancelled", "expired":
		return errSilent{fmt.Errorf("run %s %s", env.RunID, env.Status)}
	}
	return nil
}
