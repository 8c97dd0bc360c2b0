package cli

import (
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/spf13/cobra"
)

func newDisconnectCmd(e *env) *cobra.Command {
	var clients []string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "disconnect",
		Short: "Remove the `capabilities` entry from each agent's MCP config",
		Long: `Remove the capabilities entry that connect wrote from each agent harness config,
changing nothing else (what connect created around it, such as an "mcpServers" key the file
did not have, goes too). Each file is first copied to a snapshot; 'capabilities rollback' restores it.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			files, err := connectTargets(clients, false)
			if err != nil {
				return err
			}
			dir, err := hubDir()
			if err != nil {
				return err
			}
			snaps := filepath.Join(dir, "snapshots")
			var changes []edit.Change
			for _, f := range files {
				format, key := edit.Format(f.Format), f.ServersKey
				created := 0
				if rec, ok := edit.LastConnect(snaps, f.Path); ok {
					created = rec.Created
				}
				changes = append(changes, edit.Change{
					Harness: f.Harness, Path: f.Path,
					Edit: func(src []byte) ([]byte, error) {
						if src == nil {
							return nil, nil // no file: nothing to take out
						}
						out, err := edit.RemoveEntry(format, src, key, entryName)
						if err != nil || string(out) == string(src) {
							return out, err
						}
						return edit.Prune(format, out, key, created)
					},
				})
			}
			return e.applyEdits("disconnect", changes, dryRun, asJSON)
		},
	}
	c.Flags().StringSliceVar(&clients, "client", nil, "only these harnesses (`NAMES`, comma-separated: "+strings.Join(writableNames(), ",")+")")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change, write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
