package cli

import (
	"fmt"
	"path/filepath"
	"time"

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
for byte, and say which command it undid. A file that changed since that command wrote it is
refused and named; --force restores it anyway. Run again, it undoes the command before that
one, and so on back, as far as the snapshots kept (the newest 20): it says which before you run
it. The credentials the files held are read back from the hub's secret store, where connect put
them.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := hubDir()
			if err != nil {
				return err
			}
			root := filepath.Join(dir, "snapshots")
			sn, err := e.snaps()
			if err != nil {
				return err
			}
			snap, res, err := sn.Rollback(c.Context(), force)
			if err != nil {
				return err
			}
			when := snapTime(snap)
			if !asJSON {
				fmt.Fprintf(e.stdout, "Undoing the hub %s of %s:\n", snap.Kind, when)
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
					fmt.Fprintf(e.stdout, "  %s restored\n", r.Path)
				}
				out = append(out, j)
			}
			if asJSON {
				if err := e.printJSON(map[string]any{"snapshot": snap.Dir(), "kind": snap.Kind, "time": when, "files": out}); err != nil {
					return err
				}
			} else if failed == 0 {
				// Say what running it again would undo: each rollback goes
				// one command further back.
				if all, err := edit.Snapshots(root); err == nil {
					for _, o := range all {
						if !o.RolledBack {
							fmt.Fprintf(e.stdout, "Running rollback again undoes the hub %s of %s.\n", o.Kind, snapTime(o))
							break
						}
					}
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

// snapTime is when a snapshot was made, in local time.
func snapTime(s *edit.Snapshot) string {
	t, err := time.Parse("20060102T150405.000000000Z", s.Time)
	if err != nil {
		return s.Time
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
