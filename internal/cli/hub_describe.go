package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newDescribeCmd(e *env) *cobra.Command {
	var (
		budget int
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "describe <target>… [--budget N]",
		Short: "Print exact TypeScript declarations of tools",
		Long:  "Print the TypeScript declarations the model reads before writing code: targets are tool addresses (memory.createEntities), namespaces (memory) or named types from an earlier declaration (github.Issue), 1 to 10 of them, within a token budget.",
		Example: `  capabilities hub describe everything.echo
  capabilities hub describe memory --budget 4000`,
		ValidArgsFunction: complete(withoutGiven(targets)),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 10 {
				return usagef("describe expects 1 to 10 targets (got %d)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if budget < 0 {
				return usagef("--budget %d: pass a positive number of tokens", budget)
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			out, err := h.Describe(c.Context(), args, budget)
			if err != nil {
				return err
			}
			if asJSON {
				return e.printJSON(map[string]any{"declarations": out})
			}
			fmt.Fprint(e.stdout, out)
			if !strings.HasSuffix(out, "\n") {
				fmt.Fprintln(e.stdout)
			}
			return nil
		},
	}
	c.Flags().IntVar(&budget, "budget", 2500, "the most `TOKENS` the output may take")
	c.Flags().BoolVar(&asJSON, "json", false, "print the declarations as a JSON string")
	return c
}
