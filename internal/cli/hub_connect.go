package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/spf13/cobra"
)

// entryName is the name of the hub's entry in every harness config.
const entryName = "capabilities"

func newConnectCmd(e *env) *cobra.Command {
	var clients []string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "connect",
		Short: "Write one `capabilities` entry into each agent's MCP config",
		Long: `Write into each agent harness whose config (or config directory) exists one stdio
MCP server entry named capabilities, running this binary's "hub serve --stdio --profile default".
Only the entry's bytes change: comments, key order, indentation, trailing commas and every
other key stay byte for byte. Each file is first copied to $CAPABILITIES_HOME/hub/snapshots/<time>/;
'capabilities rollback' restores them. Running connect twice changes nothing the second time.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			files, err := connectTargets(clients, true)
			if err != nil {
				return err
			}
			bin, err := selfPath(c.Context())
			if err != nil {
				return err
			}
			var changes []edit.Change
			for _, f := range files {
				entry := connectEntry(f.Harness, bin)
				format, key := edit.Format(f.Format), f.ServersKey
				changes = append(changes, edit.Change{
					Harness: f.Harness, Path: f.Path,
					Edit: func(src []byte) ([]byte, error) {
						return edit.SetEntry(format, src, key, entryName, entry)
					},
					Created: func(src []byte) int { n, _ := edit.Missing(format, src, key); return n },
				})
			}
			return e.applyEdits("connect", changes, dryRun, asJSON)
		},
	}
	c.Flags().StringSliceVar(&clients, "client", nil, "only these harnesses (`NAMES`, comma-separated: "+strings.Join(writableNames(), ",")+")")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change, write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// connectEntry is the hub's entry in the harness's own shape.
func connectEntry(h, bin string) edit.Entry {
	args := []string{"hub", "serve", "--stdio", "--profile", "default"}
	switch h {
	case "claude-code", "vscode":
		return edit.Entry{{Key: "type", Value: "stdio"}, {Key: "command", Value: bin}, {Key: "args", Value: args}}
	}
	return edit.Entry{{Key: "command", Value: bin}, {Key: "args", Value: args}}
}

func writableNames() []string {
	var out []string
	for _, h := range harness.All() {
		if h.Connect {
			out = append(out, h.Name)
		}
	}
	return out
}

// connectTargets lists the writable config files: of the named harnesses,
// or of every harness whose config or config directory exists.
func connectTargets(clients []string, needDir bool) ([]harness.File, error) {
	env, err := harness.FromOS()
	if err != nil {
		return nil, fmt.Errorf("finding the harness configs: %w", err)
	}
	want := map[string]bool{}
	for _, c := range clients {
		h, ok := harness.Lookup(c)
		if !ok {
			return nil, usagef("--client %q: not a harness (one of %s)", c, strings.Join(writableNames(), ", "))
		}
		if !h.Connect {
			return nil, usagef("--client %q: connect does not write %s's config", c, h.Title)
		}
		want[c] = true
	}
	var out []harness.File
	for _, h := range harness.All() {
		if !h.Connect || (len(want) > 0 && !want[h.Name]) {
			continue
		}
		for _, f := range h.Files(env) {
			if !f.Writable {
				continue
			}
			_, ferr := os.Lstat(f.Path)
			dir := filepath.Dir(f.Path)
			_, derr := os.Stat(dir)
			if ferr == nil || want[h.Name] || (needDir && derr == nil && dir != env.Home) {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// selfPath is the absolute path of this binary as it was started (a
// symlink such as /usr/local/bin/capabilities is kept), checked: it
// exists, is executable, and answers --version.
func selfPath(ctx context.Context) (string, error) {
	p := os.Args[0]
	if !strings.ContainsRune(p, filepath.Separator) {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		} else if exe, err := os.Executable(); err == nil {
			p = exe
		}
	}
	p, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w", err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("checking this binary %s: %w", p, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("checking this binary %s: it is not executable", p)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p, "--version").Output()
	if err != nil || !strings.Contains(string(out), "capabilities") {
		return "", fmt.Errorf("checking this binary %s: it does not answer --version (%v): agents could not start it", p, err)
	}
	return p, nil
}

type editJSON struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Status  string `json:"status"` // changed, unchanged, would-change, error
	Error   string `json:"error,omitempty"`
}

// applyEdits writes (or with dryRun shows) the changes and reports each
// file. A file that could not be edited is an error at the end; the others
// are written.
func (e *env) applyEdits(kind string, changes []edit.Change, dryRun, asJSON bool) error {
	dir, err := hubDir()
	if err != nil {
		return err
	}
	var results []edit.Result
	var snap *edit.Snapshot
	if dryRun {
		results = edit.Plan(changes)
	} else {
		snap, results, err = edit.Apply(filepath.Join(dir, "snapshots"), kind, changes)
		if err != nil {
			return err
		}
	}
	var out []editJSON
	failed := 0
	for _, r := range results {
		j := editJSON{Harness: r.Harness, Path: r.Path}
		switch {
		case r.Err != nil:
			j.Status, j.Error = "error", r.Err.Error()
			failed++
		case !r.Changed:
			j.Status = "unchanged"
		case dryRun:
			j.Status = "would-change"
		default:
			j.Status = "changed"
		}
		out = append(out, j)
		if asJSON {
			continue
		}
		switch j.Status {
		case "error":
			fmt.Fprintf(e.stderr, "capabilities: %s\n", j.Error)
		case "would-change":
			fmt.Fprintf(e.stdout, "%s: %s would change:\n%s", r.Harness, r.Path, lineDiff(r.Before, r.After))
		default:
			fmt.Fprintf(e.stdout, "%s: %s %s\n", r.Harness, r.Path, j.Status)
		}
	}
	if asJSON {
		doc := map[string]any{"files": out}
		if snap != nil {
			doc["snapshot"] = snap.Dir()
		}
		if err := e.printJSON(doc); err != nil {
			return err
		}
	} else if len(results) == 0 {
		fmt.Fprintln(e.stdout, "no harness config found (name one with --client)")
	} else if snap != nil {
		fmt.Fprintf(e.stdout, "snapshot: %s (capabilities rollback restores it)\n", snap.Dir())
	}
	if failed > 0 {
		err := fmt.Errorf("%s: %d of %d files could not be edited; nothing was written to them", kind, failed, len(results))
		if asJSON {
			return errSilent{err}
		}
		return err
	}
	return nil
}

// lineDiff shows the lines that differ between a and b (they differ in one
// place: the entry).
func lineDiff(a, b []byte) string {
	al, bl := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	s := 0
	for s < len(al)-p && s < len(bl)-p && al[len(al)-1-s] == bl[len(bl)-1-s] {
		s++
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "@@ line %d @@\n", p+1)
	for _, l := range al[p : len(al)-s] {
		sb.WriteString("- " + strings.TrimRight(l, "\r\n") + "\n")
	}
	for _, l := range bl[p : len(bl)-s] {
		sb.WriteString("+ " + strings.TrimRight(l, "\r\n") + "\n")
	}
	return sb.String()
}
