package cli

import (
	"fmt"
	"time"

	"github.com/capabilities-sh/capabilities/engine/sandbox"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

func newInitCmd(e *env) *cobra.Command {
	var (
		asJSON bool
		doImp  bool
		imp    importFlags
	)
	c := &cobra.Command{
		Use:   "init",
		Short: "Create the hub (idempotent)",
		Long:  "Create the hub at $CAPABILITIES_HOME/hub (default ~/.capabilities/hub): directories mode 700, files mode 600. Running it again keeps what is there. With --store (or CAPABILITIES_STORE) set to a postgres:// URL, the records are kept in that database instead: init applies its migrations and records the hub there (the hub folder keeps what belongs to this machine only). With --import, then import the MCP servers the agents already have (see capabilities hub import --help).",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			if doImp {
				if asJSON && !imp.yes {
					return usagef("--json needs --yes: the JSON form does not prompt")
				}
			} else if imp.yes || len(imp.from) > 0 {
				return usagef("--yes and --from go with --import")
			}
			dir, err := hubDir()
			if err != nil {
				return err
			}
			url, err := e.storeURL()
			if err != nil {
				return err
			}
			var f hubStore
			var created bool
			if url == "" {
				f, created, err = store.Init(dir)
			} else {
				f, created, err = initPostgres(c.Context(), url, dir)
			}
			if err != nil {
				return fmt.Errorf("initializing the hub: %w", err)
			}
			where := dir // what the messages name
			if p, ok := f.(*pgStore); ok {
				defer p.Close()
				where = "postgres " + p.Where()
			}
			sandboxState := warmSandbox(e, asJSON)
			if doImp {
				if !asJSON {
					if created {
						fmt.Fprintf(e.stdout, "Created the hub at %s\n", where)
					} else {
						fmt.Fprintf(e.stdout, "The hub at %s already exists.\n", where)
					}
				}
				imp.asJSON = asJSON
				return runImport(c.Context(), e, imp)
			}
			if asJSON {
				out := map[string]any{"dir": dir, "created": created, "schema": f.Hub().Schema, "id": f.Hub().ID, "sandbox": sandboxState}
				if p, ok := f.(*pgStore); ok {
					out["store"] = p.Where()
				}
				return e.printJSON(out)
			}
			if created {
				fmt.Fprintf(e.stdout, "Created the hub at %s\nNext: capabilities hub add -- <command> [args…]   or   capabilities hub add <url>\n", where)
			} else {
				fmt.Fprintf(e.stdout, "The hub at %s already exists; nothing changed.\n", where)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&doImp, "import", false, "then import the MCP servers of the agent harnesses (like capabilities hub import)")
	imp.register(c, false)
	return c
}

// warmSandbox compiles the sandbox's QuickJS into this machine's cache once,
// so that an agent's first execute loads it instead of compiling it (most of
// a second on a small machine). It says so, and what it is, on stderr
// unless asJSON; a failure is said, not fatal: the first execute compiles.
// It returns "compiled", "cached" or "failed: …".
func warmSandbox(e *env, asJSON bool) string {
	start := time.Now()
	compiled, err := sandbox.Warm(sandbox.DefaultCacheDir())
	switch {
	case err != nil:
		if !asJSON {
			fmt.Fprintf(e.stderr, "note: the sandbox was not prepared ahead (%v); the first execute compiles it\n", err)
		}
		return "failed: " + err.Error()
	case compiled:
		if !asJSON {
			fmt.Fprintf(e.stderr, "Prepared the sandbox for the first execute: QuickJS compiled for this machine in %.1f s, kept in %s\n", time.Since(start).Seconds(), sandbox.DefaultCacheDir())
		}
		return "compiled"
	}
	return "cached"
}
