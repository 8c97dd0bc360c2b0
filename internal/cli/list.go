package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

// censusSource is one source in `capabilities list --json`.
type censusSource struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	// Command (stdio) or URL (http, openapi), credentials masked as hub
	// list masks them.
	Command   string `json:"command,omitempty"`
	URL       string `json:"url,omitempty"`
	ToolCount int    `json:"toolCount"`
	// Connections are the names of its connections (never a secret).
	Connections []string `json:"connections"`
	// Slug is the catalog capability that installed it (the stack's
	// capabilities.lock), "" when none did.
	Slug string `json:"slug,omitempty"`
	// Connected are the hub's entries in the agents' configs whose profile
	// serves this source's tools.
	Connected []agentEntry `json:"connected"`
	// Direct are the agents' own entries that run the same server
	// directly, beside the hub.
	Direct []directEntry `json:"direct"`
	// Problem says why the source's record could not be read.
	Problem string `json:"problem,omitempty"`
}

// directEntry is an agent's own entry that runs a source of the hub.
type directEntry struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Entry   string `json:"entry"`
}

// censusSkill is one skill in `capabilities list --json`.
type censusSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Files       int    `json:"files"`
	// Origin is the folder it was added from, or URL@commit[//folder].
	Origin string `json:"origin"`
	Slug   string `json:"slug,omitempty"`
	// Installed are the agents' skill folders holding a copy of it.
	Installed []skillCopy `json:"installed"`
}

// skillCopy is a skill's folder in an agent's skills folder.
type skillCopy struct {
	Harness string `json:"harness"`
	Dir     string `json:"dir"`
	// Status: "same" (its SKILL.md is the hub's), "differs" (a folder of
	// that name whose SKILL.md is not the hub's).
	Status string `json:"status"`
}

func newCensusListCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the installed capabilities (sources and skills) and where each is connected",
		Long: `List the hub's sources (namespace, kind, command or URL with credentials masked, tool
count, connections) and skills, and where each is connected: the agents whose config holds the
hub's entry with a profile that serves the source (and the agents' own entries that run the same
server directly), and the agents whose skills folder holds a copy of the skill. A capability
installed from the catalog (the stack's capabilities.lock) shows its slug. It reads the cached
manifests and the agents' configs; it starts nothing and writes nothing.

--json prints {"sources": [...], "skills": [...], "agents": [...], "unreadable": [...]}:
each source {namespace, kind, command|url, toolCount, connections, slug, connected: [{harness,
path, scope, entry, profile, command, off, profileGone}], direct: [{harness, path, entry}]}, each skill {name,
description, files, origin, slug, installed: [{harness, dir, status: same|differs}]}, agents the
hub's entries found, unreadable the configs that could not be read ({harness, path, error}).
Lists are never null; fields may be added, none renamed.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			cs, err := readCensus()
			if err != nil {
				return err
			}
			slugs, _, lerr := lockSlugs()
			if lerr != nil {
				slugs = map[string]string{}
			}
			entries := cs.hubEntries()
			profiles := map[string]*hub.Profile{}
			for _, a := range entries {
				if _, seen := profiles[a.Profile]; !seen {
					p, err := h.Profile(c.Context(), a.Profile)
					if err != nil && !errors.Is(err, hub.ErrUnknownProfile) {
						return err
					}
					profiles[a.Profile] = p // nil: gone (doctor says so)
				}
			}
			for i := range entries {
				entries[i].ProfileGone = profiles[entries[i].Profile] == nil
			}
			recs, err := h.Sources(c.Context())
			if err != nil {
				return err
			}
			sources := []censusSource{}
			for _, r := range recs {
				src := r.Source
				row := censusSource{Namespace: src.Namespace, Kind: src.Kind, Command: src.ShownCommandLine(), Slug: slugs[src.Namespace],
					Connections: []string{}, Connected: []agentEntry{}, Direct: []directEntry{}}
				if src.Kind != model.KindStdio {
					row.URL = src.ShownURL()
				}
				if r.Manifest != nil {
					row.ToolCount = len(r.Manifest.Tools)
				}
				conns, err := h.Connections(c.Context(), src.Namespace)
				if err != nil {
					return err
				}
				for _, it := range conns.Items {
					row.Connections = append(row.Connections, it.Name)
				}
				for _, a := range entries {
					if profileShows(profiles[a.Profile], src.Namespace) {
						row.Connected = append(row.Connected, a)
					}
				}
				sources = append(sources, row)
			}
			addDirect(cs, sources, recs)
			bad, err := h.Unreadable(c.Context())
			if err != nil {
				return err
			}
			for _, b := range bad {
				sources = append(sources, censusSource{Namespace: b.Namespace, Problem: fmt.Sprintf("%v (%s)", b.Err, b.Fix()),
					Connections: []string{}, Connected: []agentEntry{}, Direct: []directEntry{}})
			}
			skills, err := censusSkills(h, cs.env, slugs)
			if err != nil {
				return err
			}
			unreadable := []harness.Unreadable{}
			for _, cf := range cs.configs {
				if cf.Err != nil {
					unreadable = append(unreadable, harness.Unreadable{Harness: cf.File.Harness, Path: cf.File.Path, Error: cf.Err.Error()})
				}
			}
			if lerr != nil {
				fmt.Fprintf(e.stderr, "capabilities: %v (slugs not shown; see capabilities doctor)\n", lerr)
			}
			if asJSON {
				type unreadableJSON struct {
					Harness string `json:"harness"`
					Path    string `json:"path"`
					Error   string `json:"error"`
				}
				un := []unreadableJSON{}
				for _, u := range unreadable {
					un = append(un, unreadableJSON(u))
				}
				return e.printJSON(map[string]any{"sources": sources, "skills": skills, "agents": entries, "unreadable": un})
			}
			for _, u := range unreadable {
				fmt.Fprintf(e.stderr, "capabilities: %s: %s could not be read: %s (capabilities doctor says how to fix it)\n", u.Harness, u.Path, u.Error)
			}
			e.printCensus(sources, skills, entries)
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the census as JSON (fields documented in --help)")
	return c
}

// addDirect fills in each source's Direct: the agents' own entries that
// run the same server (harness.Direct's rule: the same command, arguments,
// working directory and environment, or the same URL and headers).
func addDirect(cs *census, sources []censusSource, recs []hub.SourceRecord) {
	for _, cf := range cs.configs {
		if cf.Err != nil || len(cf.Servers) == 0 {
			continue
		}
		data, err := os.ReadFile(cf.File.Path)
		if err != nil {
			continue
		}
		for i, r := range recs {
			names, _ := harness.Direct(cs.env, cf.File, data, []model.Source{r.Source})
			for _, n := range names {
				sources[i].Direct = append(sources[i].Direct, directEntry{Harness: cf.File.Harness, Path: cf.File.Path, Entry: n})
			}
		}
	}
}

// censusSkills lists the hub's skills and the agents' skills folders that
// hold a folder of each one's name.
func censusSkills(h *hub.Hub, env harness.Env, slugs map[string]string) ([]censusSkill, error) {
	out := []censusSkill{}
	st, ok := h.Skills()
	if !ok {
		return out, nil
	}
	all, err := st.List()
	if err != nil {
		return nil, fmt.Errorf("reading the hub's skills: %w", err)
	}
	for _, s := range all {
		from := s.Origin.Path
		if s.Origin.Git != "" {
			from = s.Origin.Git + "@" + s.Origin.Commit
			if s.Origin.Subdir != "" {
				from += "//" + s.Origin.Subdir
			}
		}
		cs := censusSkill{Name: s.Name, Description: s.Description, Files: len(s.Files), Origin: from, Slug: slugs[s.Name], Installed: []skillCopy{}}
		mine, _ := os.ReadFile(filepath.Join(s.Dir, "SKILL.md"))
		for _, hr := range harness.All() {
			dir := hr.SkillsDir(env)
			if dir == "" {
				continue
			}
			d := filepath.Join(dir, s.Name)
			theirs, err := os.ReadFile(filepath.Join(d, "SKILL.md"))
			if err != nil {
				continue
			}
			status := "same"
			if !bytes.Equal(theirs, mine) {
				status = "differs"
			}
			cs.Installed = append(cs.Installed, skillCopy{Harness: hr.Name, Dir: d, Status: status})
		}
		out = append(out, cs)
	}
	return out, nil
}

// printCensus prints list's text: each source and skill with where it is
// connected, then the hub's entries in the agents' configs.
func (e *env) printCensus(sources []censusSource, skills []censusSkill, entries []agentEntry) {
	w := e.stdout
	if len(sources) == 0 && len(skills) == 0 {
		fmt.Fprintln(w, "No capabilities yet. Add a source with `capabilities hub add`, a skill with `capabilities hub skills add`.")
	}
	if len(sources) > 0 {
		fmt.Fprintf(w, "Sources (%d):\n", len(sources))
	}
	for _, s := range sources {
		if s.Problem != "" {
			fmt.Fprintf(w, "  %s  unreadable: %s\n", s.Namespace, s.Problem)
			continue
		}
		where := s.Command
		if s.URL != "" {
			where = s.URL
		}
		fmt.Fprintf(w, "  %s  %s  %s  %s\n", s.Namespace, s.Kind, plural(s.ToolCount, "tool"), visible.Line(where))
		if s.Slug != "" {
			fmt.Fprintf(w, "    installed from the catalog: %s\n", s.Slug)
		}
		if len(s.Connections) > 0 {
			fmt.Fprintf(w, "    connections: %s\n", strings.Join(s.Connections, ", "))
		}
		fmt.Fprintf(w, "    connected: %s\n", connectedLine(s.Connected))
		for _, d := range s.Direct {
			fmt.Fprintf(w, "    also directly: %s, entry %q in %s\n", d.Harness, d.Entry, d.Path)
		}
	}
	if len(skills) > 0 {
		fmt.Fprintf(w, "Skills (%d):\n", len(skills))
	}
	for _, s := range skills {
		fmt.Fprintf(w, "  %s  %s  %s\n", s.Name, plural(s.Files, "file"), visible.Line(s.Origin))
		if s.Slug != "" {
			fmt.Fprintf(w, "    installed from the catalog: %s\n", s.Slug)
		}
		if len(s.Installed) == 0 {
			fmt.Fprintln(w, "    installed in: no agent (`capabilities hub connect` copies it into Claude Code's and Codex's skills)")
		}
		for _, c := range s.Installed {
			note := ""
			if c.Status == "differs" {
				note = " (differs from the hub's: not the hub's copy)"
			}
			fmt.Fprintf(w, "    installed in: %s, %s%s\n", c.Harness, c.Dir, note)
		}
	}
	if len(entries) == 0 {
		fmt.Fprintln(w, "Agents: no agent's config holds the hub's entry (`capabilities hub connect` writes it).")
		return
	}
	n := fmt.Sprintf("%d entries", len(entries))
	if len(entries) == 1 {
		n = "1 entry"
	}
	fmt.Fprintf(w, "Agents (%s of the hub):\n", n)
	for _, a := range entries {
		gone := ""
		if a.ProfileGone {
			gone = ", which the hub no longer has (capabilities doctor says how to fix it)"
		}
		fmt.Fprintf(w, "  %s  %s  %q, profile %s%s (%s)\n", a.Harness, a.Path, a.Entry, a.Profile, gone, a.Scope)
		for _, why := range a.Off {
			fmt.Fprintf(w, "    off: %s\n", why)
		}
	}
}

// connectedLine names the agents a source reaches through the hub.
func connectedLine(entries []agentEntry) string {
	if len(entries) == 0 {
		return "no agent (`capabilities hub connect` writes the hub's entry)"
	}
	var parts []string
	for _, a := range entries {
		p := fmt.Sprintf("%s (profile %s", a.Harness, a.Profile)
		if a.Scope == "project" {
			p += ", project"
		}
		if len(a.Off) > 0 {
			p += ", turned off"
		}
		parts = append(parts, p+")")
	}
	return strings.Join(parts, ", ")
}
