package cli

import (
	"fmt"
	"path/filepath"

	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/spf13/cobra"
)

// newRollbackCmd is `capabilities rollback` and `capabilities hub rollback`.
func newRollbackCmd(e *env) *cobra.Command {
	var force, asJSON bool
	c := &cobra.Command{
		Use:   "rollback",
		Short: "Restore the agent configs of the last connect or disconnect, byte for byte",
		Long: `Restore every file of the last snapshot (made by hub connect or hub disconnect) byte
for byte. A file that changed since that command wrote it is refused and named; --force
restores it anyway.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := hubDir()
			if err != nil {
				return err
			}
			snap, res, err := edit.Rollback(filepath.Join(dir, "snapshots"), force)
			if err != nil {
				return err
			}
			type fileJSON struct {
				Path   string `json:"path"`
				Status string `json:"status"`
				Error  string `json:"error,omitempty"`
			}
			var out []fileJSON
			failed := 0
			for _, r := range res {
				j := fileJSON{Path: r.Path, Status: "restored"}
				if r.Err != nil {
					j.Status, j.Error = "refused", r.Err.Error()
					failed++
					if !asJSON {
						fmt.Fprintf(e.stderr, "capabilities: %s\n", r.Err)
					}
				} else if !asJSON {
					fmt.Fprintf(e.stdout, "%s restored\n", r.Path)
				}
				out = append(out, j)
			}
			if asJSON {
				if err := e.printJSON(map[string]any{"snapshot": snap.Dir(), "files": out}); err != nil {
					return err
				}
			}
			if failed > 0 {
				err := fmt.Errorf("rollback: %d of %d files not restored", failed, len(res))
				if asJSON {
					return errSilent{err}
				}
				return err
			}
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "restore files that changed since, too")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
