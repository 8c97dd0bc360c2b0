package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
)

type editJSON struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	// Status: changed, unchanged, would-change, error; connect: kept (the
	// file has its own entry of the hub's name, and was left as it is);
	// disconnect: removed, would-remove (a file connect created, left
	// with nothing else in it).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Replaced: the harness's own entries turned off (connect --replace).
	Replaced []string `json:"replaced,omitempty"`
	// Own: the entries of the hub's name that connect did not write (the
	// person's own), left as they are.
	Own []ownJSON `json:"own,omitempty"`
	// Off: the hub's entries the file turns off by a list outside them
	// (Gemini CLI's mcp.allowed, mcp.excluded): the agent does not start
	// them.
	Off []offJSON `json:"off,omitempty"`
	// NotRestored: the entries connect --replace moved out that disconnect
	// does not put back, the file holding an entry of that name again.
	NotRestored []notRestoredJSON `json:"notRestored,omitempty"`
}

// notRestoredJSON is an entry connect --replace moved out that disconnect
// leaves out: the file has an entry of that name again (the person's),
// which it does not overwrite.
type notRestoredJSON struct {
	Name string `json:"name"`
	// Snapshot is the connect snapshot's record that keeps the entry as it
	// was written (its "replaced" list).
	Snapshot string `json:"snapshot"`
	// Fix says how to have it put back.
	Fix string `json:"fix"`
}

// notRestored reports the entries of r.Left: a dry run says what to do
// before disconnecting; after a disconnect that wrote the file, rollback
// undoes it first, so that the next one finds the record again.
func notRestored(r edit.Result, dryRun bool) []notRestoredJSON {
	var out []notRestoredJSON
	for _, l := range r.Left {
		fix := fmt.Sprintf("take out or rename the %q entry of %s, then run `capabilities hub disconnect` again: it puts back the one connect moved out", l.Name, r.Path)
		switch {
		case dryRun:
			fix = fmt.Sprintf("take out or rename the %q entry of %s before you run disconnect: it then puts back the one connect moved out", l.Name, r.Path)
		case r.Changed:
			fix = "run `capabilities rollback` (it undoes this disconnect), then " + fix
		}
		out = append(out, notRestoredJSON{Name: l.Name, Snapshot: filepath.Join(l.Snapshot, "snapshot.json"), Fix: fix})
	}
	return out
}

// offJSON is a hub entry a config turns off, and why.
type offJSON struct {
	Name string `json:"name"`
	Why  string `json:"why"`
}

// hubEntriesOff lists the hub's entries in f's bytes src that the file
// turns off by a list outside them (see harness.TurnedOff).
func hubEntriesOff(f harness.File, src []byte, bins []string) []offJSON {
	doc, err := harness.Decode(f.Format, src)
	if err != nil {
		return nil
	}
	servers, _, err := harness.Servers(f, doc)
	if err != nil {
		return nil
	}
	var out []offJSON
	untrusted := geminiUntrusted(f)
	for _, s := range servers {
		if isHubEntry(s, bins) {
			if why := harness.TurnedOff(f, doc, s.Name); why != "" {
				out = append(out, offJSON{Name: s.Name, Why: why})
			}
			for _, why := range harness.OffElsewhere(f, doc, s.Name) {
				out = append(out, offJSON{Name: s.Name, Why: why})
			}
			if untrusted != "" {
				out = append(out, offJSON{Name: s.Name, Why: untrusted})
			}
		}
	}
	return out
}

// geminiUntrusted says, for Gemini CLI's user settings, why Gemini starts
// no MCP server in this folder (it does not trust it: `gemini mcp list`
// shows each as "Disabled") and what to do; "" when it trusts it, or f is
// another harness's.
func geminiUntrusted(f harness.File) string {
	if f.Harness != "gemini" || f.Project {
		return ""
	}
	env, err := harness.FromOS()
	if err != nil {
		return ""
	}
	trusted, why, fix := harness.GeminiTrust(env, env.Cwd)
	if trusted {
		return ""
	}
	return fmt.Sprintf("Gemini CLI does not trust this folder, %s, and starts no MCP server in a folder it does not trust (gemini mcp list shows them Disabled): %s. To trust it: %s", env.Cwd, why, fix)
}

// ownLookup finds, for a result of one of files, the entries of names in
// the file's bytes that are not ours.
func ownLookup(files []harness.File, names, bins []string) func(edit.Result) []ownJSON {
	byPath := map[[2]string]harness.File{}
	for _, f := range files {
		byPath[[2]string{f.Harness, f.Path}] = f
	}
	return func(r edit.Result) []ownJSON {
		f, ok := byPath[[2]string{r.Harness, r.Path}]
		if !ok || r.Skill != "" || r.Err != nil {
			return nil
		}
		return ownEntries(f, r.Before, names, bins)
	}
}

// applyEdits writes (or with dryRun shows) the changes to files and
// reports each file; the lines a dry run shows have their credential
// values masked (maskSecrets). A file that could not be edited is an error
// at the end; the others are written. own (nil for none) names the entries
// of the hub's name a file holds that are not ours: connect reports such a
// file as kept (it left it as it is), disconnect notes them; a connect that
// kept every file and wrote none is an error.
func (e *env) applyEdits(kind string, files []harness.File, changes []edit.Change, dryRun, asJSON bool, manual []instruction, own func(edit.Result) []ownJSON, bins []string) error {
	var results []edit.Result
	var snap *edit.Snapshot
	if dryRun {
		results = edit.Plan(changes)
	} else {
		sn, err := e.snaps()
		if err != nil {
			return err
		}
		snap, results, err = sn.Apply(context.Background(), kind, changes)
		if err != nil {
			return err
		}
	}
	byPath := map[[2]string]harness.File{}
	for _, f := range files {
		byPath[[2]string{f.Harness, f.Path}] = f
	}
	var out []editJSON
	failed, kept, connected := 0, 0, 0
	var skills []skillJSON
	for _, r := range results {
		if r.Skill != "" {
			if r.Err != nil {
				failed++
			}
			skills = addSkillResult(skills, r, dryRun)
			continue
		}
		j := editJSON{Harness: r.Harness, Path: r.Path}
		for _, rep := range r.Replaced {
			j.Replaced = append(j.Replaced, rep.Name)
		}
		if own != nil {
			j.Own = own(r)
		}
		if kind == "connect" && r.Err == nil {
			j.Off = hubEntriesOff(byPath[[2]string{r.Harness, r.Path}], r.After, bins)
		}
		if r.Err == nil {
			j.NotRestored = notRestored(r, dryRun)
		}
		switch {
		case r.Err != nil:
			j.Status, j.Error = "error", r.Err.Error()
			failed++
		case kind == "connect" && len(j.Own) > 0 && !r.Changed:
			j.Status = "kept"
			kept++
		case !r.Changed:
			j.Status = "unchanged"
		case r.Delete && dryRun:
			j.Status = "would-remove"
		case r.Delete:
			j.Status = "removed"
		case dryRun:
			j.Status = "would-change"
		default:
			j.Status = "changed"
		}
		if j.Status != "error" && j.Status != "kept" {
			connected++
		}
		out = append(out, j)
		if asJSON {
			continue
		}
		switch j.Status {
		case "error":
			fmt.Fprintf(e.stderr, "capabilities: %s\n", j.Error)
		case "would-change":
			fmt.Fprintf(e.stdout, "%s: %s would change:\n%s", r.Harness, r.Path, maskSecrets(byPath[[2]string{r.Harness, r.Path}], lineDiff(r.Before, r.After), r.Before, r.After))
		case "kept":
			fmt.Fprintf(e.stdout, "%s: %s kept as it is\n", r.Harness, r.Path)
		case "would-remove", "removed":
			would := "removed"
			if dryRun {
				would = "would be removed"
			}
			fmt.Fprintf(e.stdout, "%s: %s %s (connect created it, and nothing else is in it)\n", r.Harness, r.Path, would)
		default:
			fmt.Fprintf(e.stdout, "%s: %s %s\n", r.Harness, r.Path, j.Status)
		}
		if j.Status != "error" {
			fmt.Fprint(e.stdout, ownNote(kind, j.Own))
		}
		for _, o := range j.Off {
			fmt.Fprintf(e.stdout, "  warning: the agent will not start %q: %s\n", o.Name, o.Why)
		}
		for _, n := range j.NotRestored {
			would := "is not"
			if dryRun {
				would = "would not be"
			}
			fmt.Fprintf(e.stdout, "  warning: %q %s put back: %s has an entry of that name again, left as it is; the %q entry connect --replace moved out is kept in the snapshot, %s (under \"replaced\"). To have it back: %s.\n", n.Name, would, r.Path, n.Name, n.Snapshot, n.Fix)
		}
		if len(j.Replaced) > 0 && j.Status != "error" {
			how := "moved into the snapshot"
			if h, _ := harness.Lookup(r.Harness); h.Off.Key != "" {
				how = "turned off"
			}
			if dryRun {
				how = "would be " + how
			}
			fmt.Fprintf(e.stdout, "  %s: %s (the agent reaches them through the hub)\n", how, strings.Join(j.Replaced, ", "))
		}
	}
	if !asJSON {
		for _, s := range skills {
			if s.Status == "error" {
				fmt.Fprintf(e.stderr, "capabilities: %s: skill %s: %s\n", s.Harness, s.Skill, s.Error)
				continue
			}
			fmt.Fprintf(e.stdout, "%s: skill %s in %s %s\n", s.Harness, s.Skill, s.Dir, s.Status)
		}
		for _, m := range manual {
			fmt.Fprintf(e.stdout, "%s: connect does not write %s; add this under %q:\n%s", m.Harness, m.Path, m.Key, indent(m.Entry, "    "))
		}
	}
	if asJSON {
		doc := map[string]any{"files": out}
		if len(skills) > 0 {
			doc["skills"] = skills
		}
		if len(manual) > 0 {
			doc["manual"] = manual
		}
		if snap != nil {
			doc["snapshot"] = snap.Dir()
		}
		if err := e.printJSON(doc); err != nil {
			return err
		}
	} else if len(out) == 0 && len(skills) == 0 && len(manual) == 0 {
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
	if kind == "connect" && kept > 0 && connected == 0 {
		err := fmt.Errorf("connect: nothing written: each config found already has its own %s entry, which connect does not replace (see above); remove it and run connect again, or name other agents with --client", quotedNames(out))
		if asJSON {
			return errSilent{err}
		}
		return err
	}
	return nil
}

// quotedNames are the names of the entries kept, quoted, once each.
func quotedNames(files []editJSON) string {
	var names []string
	for _, f := range files {
		for _, o := range f.Own {
			if q := strconv.Quote(o.Name); !slices.Contains(names, q) {
				names = append(names, q)
			}
		}
	}
	return strings.Join(names, ", ")
}

// skillJSON is what connect or disconnect did to one skill's copy in one
// harness.
type skillJSON struct {
	Harness string `json:"harness"`
	Skill   string `json:"skill"`
	Dir     string `json:"dir"`
	// Status: installed, removed, unchanged, would-install, would-remove,
	// error.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// addSkillResult folds one file's result into its skill's line: an error
// in any file is the skill's; a skill is unchanged only when every file is.
func addSkillResult(skills []skillJSON, r edit.Result, dryRun bool) []skillJSON {
	dir := filepath.Dir(r.Path)
	for filepath.Base(dir) != r.Skill && filepath.Dir(dir) != dir {
		dir = filepath.Dir(dir)
	}
	status := "unchanged"
	switch {
	case r.Err != nil:
		status = "error"
	case !r.Changed:
	case r.Delete && dryRun:
		status = "would-remove"
	case r.Delete:
		status = "removed"
	case dryRun:
		status = "would-install"
	default:
		status = "installed"
	}
	for i := range skills {
		s := &skills[i]
		if s.Harness != r.Harness || s.Skill != r.Skill {
			continue
		}
		if s.Status == "error" {
			return skills
		}
		if status == "error" || s.Status == "unchanged" {
			s.Status = status
		}
		if r.Err != nil {
			s.Error = r.Err.Error()
		}
		return skills
	}
	s := skillJSON{Harness: r.Harness, Skill: r.Skill, Dir: dir, Status: status}
	if r.Err != nil {
		s.Error = r.Err.Error()
	}
	return append(skills, s)
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
