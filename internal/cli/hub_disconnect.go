package cli

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/spf13/cobra"
)

func newDisconnectCmd(e *env) *cobra.Command {
	var clients []string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "disconnect",
		Short: "Remove the `capabilities` entry from each agent's MCP config",
		Long: `Remove the capabilities entry that connect wrote from each agent harness config (and the
capabilities-<profile> entry of each profile's connect --profile), changing nothing else (what connect created around it, such as an "mcpServers" key the file
did not have, goes too; a file connect created, and the folders it made for it, go when nothing
else is left in it, such as "{}"; anything the person added since keeps it), and turn back on the entries connect --replace turned off. An entry
it moved out whose name the file holds again (written since) is not overwritten: disconnect
says so, where the snapshot keeps the one moved out, and how to have it back. The skill
copies connect installed go too (a file changed since is left, and named). Each file is first copied to a snapshot; 'capabilities rollback' restores it.

An entry of that name that connect did not write (the person's own, such as an HTTP entry for
the desktop app's hub; see 'capabilities hub connect --help' for the rule) is never taken out:
it is left byte for byte and named, with its command or URL (credential values masked).`,
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
			sn, err := e.snaps()
			if err != nil {
				return err
			}
			names := e.entryNames(c.Context())
			self, _ := selfCommand() // none: the entries named capabilities only
			bins := hubBinaries(snaps, self)
			var changes []edit.Change
			var made []string // folders connect made for a file it created
			for _, f := range files {
				format, key := edit.Format(f.Format), f.ServersKey
				created := 0
				var blank *string
				if rec, ok := edit.LastConnect(snaps, f.Path); ok {
					created, blank = rec.Created, rec.Blank
				}
				replaced, err := sn.ReplacedAt(c.Context(), f.Path)
				if err != nil {
					return fmt.Errorf("disconnect: %w", err)
				}
				// A file connect created goes when nothing else is left in it.
				ours, dirs := edit.CreatedByConnect(snaps, f.Path)
				made = append(made, dirs...)
				changes = append(changes, edit.Change{
					Harness: f.Harness, Path: f.Path, Format: format, RemoveEmpty: ours,
					Edit: func(src []byte) ([]byte, error) {
						if src == nil {
							return nil, nil // no file: nothing to take out
						}
						out := src
						for _, name := range append(slices.Clone(names), oursBeyond(f, src, names, bins)...) {
							if ownEntry(f, out, name, bins) != nil {
								continue // the person's own: never taken out
							}
							var err error
							if out, err = edit.RemoveEntry(format, out, key, name); err != nil {
								return nil, err
							}
						}
						out, err := turnBackOn(format, out, key, replaced)
						if err != nil {
							return out, err
						}
						if ours {
							// A file connect created, whose servers' object
							// (connect's too) is all that is left, empty:
							// nothing else is in it, and it goes.
							if all, err := edit.Prune(format, out, key, len(key)); err == nil && edit.Empty(format, all) {
								return all, nil
							}
						}
						if string(out) == string(src) {
							return out, nil
						}
						if out, err = edit.Prune(format, out, key, created); err != nil {
							return nil, err
						}
						return edit.Unprune(format, out, blank), nil
					},
					Left: func(src []byte) []edit.Replaced { return leftOut(format, src, key, replaced) },
				})
			}
			removals, dirs := skillRemovals(files, snaps)
			changes = append(changes, removals...)
			err = e.applyEdits("disconnect", files, changes, dryRun, asJSON, nil, ownLookup(files, names, bins), bins)
			if !dryRun {
				edit.RemoveEmptyDirs(append(dirs, made...)) // only those left empty
			}
			return err
		},
	}
	c.Flags().StringSliceVar(&clients, "client", nil, "only these harnesses (`NAMES`, comma-separated: "+strings.Join(writableNames(), ",")+")")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change (credential values masked), write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// entryNames are the names of the hub's entries: capabilities, and
// capabilities-<profile> for each profile the hub has (connect --profile).
func (e *env) entryNames(ctx context.Context) []string {
	names := []string{entryName}
	h, _, err := e.openHub()
	if err != nil {
		return names
	}
	defer h.Close()
	ps, err := h.Profiles(ctx)
	if err != nil {
		e.log.Warn("listing profiles: only the capabilities entry is taken out", "err", err)
		return names
	}
	for _, p := range ps {
		if n, _ := profileEntry(p.Name); n != entryName {
			names = append(names, n)
		}
	}
	return names
}

// oursBeyond are the entries of src named capabilities-<profile> that
// connect wrote (isHubEntry) for a profile the hub no longer has: names
// does not list them, and left in place they would fail in the agent.
func oursBeyond(f harness.File, src []byte, names, bins []string) []string {
	doc, err := harness.Decode(f.Format, src)
	if err != nil {
		return nil
	}
	servers, _, err := harness.Servers(f, doc)
	if err != nil {
		return nil
	}
	env, err := hubEnv()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range servers {
		// This hub's: another hub's entries name another home.
		if strings.HasPrefix(s.Name, entryName+"-") && !slices.Contains(names, s.Name) && isHubEntry(s, bins) && s.Env[homeVar] == env[homeVar] {
			out = append(out, s.Name)
		}
	}
	return out
}

// leftOut are the entries connect --replace moved out of the file that
// turnBackOn leaves out: src holds an entry of that name again (the
// person wrote it since), which is not overwritten. One written again as
// it was moved out loses nothing, and is not listed.
func leftOut(format edit.Format, src []byte, key []string, replaced []edit.Replaced) []edit.Replaced {
	var out []edit.Replaced
	for _, r := range replaced {
		if r.Flag != "" || r.Entry == "" {
			continue
		}
		if now, there, _ := edit.Take(format, src, key, r.Name); there && strings.TrimSpace(now) != strings.TrimSpace(r.Entry) {
			out = append(out, r)
		}
	}
	return out
}

// turnBackOn undoes what connect --replace did to the harness's own
// entries: a flag goes back to what it was, a moved entry is put back
// where it was, in the order the file had them (so that each finds the
// one it followed). An entry the person removed or wrote again since is
// left as it is.
func turnBackOn(format edit.Format, src []byte, key []string, replaced []edit.Replaced) ([]byte, error) {
	out := src
	replaced = slices.Clone(replaced)
	slices.SortStableFunc(replaced, func(a, b edit.Replaced) int { return cmp.Compare(a.Place.Index, b.Place.Index) })
	for _, r := range replaced {
		var err error
		entryPath := append(slices.Clone(key), r.Name)
		if _, there, _ := edit.EntryJSON(format, out, key, r.Name); r.Flag != "" && there {
			switch r.Prior {
			case "":
				out, err = edit.RemoveFlag(format, out, entryPath, r.Flag)
			case "true", "false":
				out, err = edit.SetFlag(format, out, entryPath, r.Flag, r.Prior == "true")
			}
		} else if r.Flag == "" && !there && r.Entry != "" {
			out, err = edit.PutBack(format, out, key, r.Name, r.Entry, r.Place)
		}
		if err != nil {
			return nil, fmt.Errorf("turning %s back on: %w", r.Name, err)
		}
	}
	return out, nil
}
