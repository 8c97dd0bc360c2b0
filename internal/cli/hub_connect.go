package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/edit"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/spf13/cobra"
)

// entryName is the name of the hub's entry in every harness config.
const entryName = "capabilities"

func newConnectCmd(e *env) *cobra.Command {
	var clients []string
	var dryRun, asJSON, replace bool
	profile := hub.DefaultProfile
	c := &cobra.Command{
		Use:   "connect",
		Short: "Write one `capabilities` entry into each agent's MCP config",
		Long: `Write into each agent harness whose config (or config directory) exists one stdio
MCP server entry named capabilities, running this binary's "hub serve --stdio --profile default".
Only the entry's bytes change: comments, key order, indentation, trailing commas and every
other key stay byte for byte. Each file is first copied to $CAPABILITIES_HOME/hub/snapshots/<time>/;
'capabilities rollback' restores them. The copy holds no credential in clear: each token, key or
password the file holds goes to the hub's secret store (the OS keychain), and the copy names its
entry; rollback reads it back. The newest 20 snapshots are kept (and older ones disconnect still
needs). Running connect twice changes nothing the second time.

With --replace, the entries that run a server the hub already has (what hub import brought in:
the same command, arguments, working directory and environment as a source's, or the same URL
and headers; a credential is compared by its name, not its value) are turned off in each
harness's own way (Codex and Zed: enabled = false; Windsurf: disabled: true; Claude Code,
Claude Desktop, Cursor, VS Code and Gemini CLI have no such key: the entry moves out of the
file into the snapshot), so the agent reaches those servers only through the hub.
'capabilities hub disconnect' turns them on again.

Each skill of the hub (capabilities hub skills) is copied into the skills folder of each
harness written that reads skills (Claude Code: ~/.claude/skills/<name>/, Codex:
~/.codex/skills/<name>/); the copy is recorded in the snapshot, and disconnect or rollback take
it out again. A folder of that name that is not the hub's copy is left as it is (an error).

When the hub is not at the default place (CAPABILITIES_HOME set to another directory than
~/.capabilities), the entry also sets CAPABILITIES_HOME to the hub's absolute path in its env,
so the agent's "hub serve --stdio" opens this hub and not the one in ~/.capabilities.

An entry of that name that connect did not write is the person's own and is left byte for byte
(with the rest of its file): for example an HTTP entry for the desktop app's hub. Connect's own
entry is a stdio entry running a capabilities binary (any path) as "hub serve --stdio",
optionally with "--profile NAME", with no env other than CAPABILITIES_HOME; connect updates
such an entry. Connect names each config it left, with the entry's command or URL (credential
values masked): remove that entry and run connect again to have connect write its own. Connect
exits 0 when it wrote (or found already written) its entry in at least one config; when every
config it found has such an entry of its own, it exits 1 and says so. Disconnect never takes out
an entry that is not connect's: it leaves it, and says so.

Antigravity, Hermes and pi are not written: connect prints the entry to add and where.`,
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
			env, err := hubEnv()
			if err != nil {
				return err
			}
			if profile != hub.DefaultProfile {
				if err := e.checkProfile(c.Context(), profile); err != nil {
					return err
				}
			}
			var sources []model.Source
			if replace {
				if sources, err = e.hubSources(c.Context()); err != nil {
					return fmt.Errorf("connect --replace: %w", err)
				}
			}
			dir, err := hubDir()
			if err != nil {
				return err
			}
			bins := hubBinaries(filepath.Join(dir, "snapshots"), bin)
			var changes []edit.Change
			for _, f := range files {
				changes = append(changes, connectChange(f, bin, bins, sources, profile, env))
			}
			installs, err := e.profileSkillInstalls(c.Context(), files, profile)
			if err != nil {
				return err
			}
			changes = append(changes, installs...)
			name, _ := profileEntry(profile)
			own := ownLookup(files, []string{name}, bins)
			return e.applyEdits("connect", files, changes, dryRun, asJSON, instructions(clients, bin, profile, env), own, bins)
		},
	}
	c.Flags().StringSliceVar(&clients, "client", nil, "only these harnesses (`NAMES`, comma-separated: "+strings.Join(writableNames(), ",")+")")
	c.Flags().BoolVar(&replace, "replace", false, "also turn off the agents' own entries for servers the hub has")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change (credential values masked), write nothing")
	c.Flags().StringVar(&profile, "profile", hub.DefaultProfile, "write the entry of profile `NAME` (named capabilities-NAME; default's is capabilities)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// connectChange writes the hub's entry into f and, when sources are given
// (--replace), turns off f's entries that run one of them. A file that
// holds an entry of that name that is not ours (the person's own, see
// isHubEntry: bins) is left as it is, whole.
func connectChange(f harness.File, bin string, bins []string, sources []model.Source, profile string, env map[string]string) edit.Change {
	entry := connectEntry(f.Harness, bin, profile, env)
	entryName, _ := profileEntry(profile)
	format, key := edit.Format(f.Format), f.ServersKey
	h, _ := harness.Lookup(f.Harness)
	henv, err := harness.FromOS()
	if err != nil {
		henv = harness.Env{} // entries compared as written
	}
	theirs := func(src []byte) bool { return ownEntry(f, src, entryName, bins) != nil }
	direct := func(src []byte) []string {
		if len(sources) == 0 || theirs(src) {
			return nil
		}
		names, _ := harness.Direct(henv, f, src, sources)
		return names
	}
	return edit.Change{
		Harness: f.Harness, Path: f.Path, Format: format, Command: bin,
		Edit: func(src []byte) ([]byte, error) {
			if theirs(src) {
				return src, nil
			}
			out, err := edit.SetEntry(format, src, key, entryName, entry, entryKeys...)
			for _, name := range direct(src) {
				if err != nil {
					break
				}
				if h.Off.Key != "" {
					out, err = edit.SetFlag(format, out, append(slices.Clone(key), name), h.Off.Key, h.Off.Value)
				} else {
					out, err = edit.RemoveEntry(format, out, key, name)
				}
			}
			return out, err
		},
		Created: func(src []byte) int {
			if theirs(src) {
				return 0
			}
			n, _ := edit.Missing(format, src, key)
			return n
		},
		Replaced: func(src []byte) []edit.Replaced {
			var out []edit.Replaced
			for _, name := range direct(src) {
				r := edit.Replaced{Name: name, Flag: h.Off.Key}
				if h.Off.Key != "" {
					if prior, ok, _ := edit.EntryJSON(format, src, append(slices.Clone(key), name), h.Off.Key); ok {
						r.Prior = string(prior)
					}
				} else {
					r.Entry, _, _ = edit.Take(format, src, key, name)
					r.Place, _, _ = edit.Where(format, src, key, name)
				}
				out = append(out, r)
			}
			return out
		},
	}
}

// snaps are connect's snapshots: in the hub's folder, the credentials
// their copies leave out in the hub's secret store (the OS keychain, or
// its mode-600 file beside the snapshots, as the hub's own).
func (e *env) snaps() (edit.Snaps, error) {
	dir, err := hubDir()
	if err != nil {
		return edit.Snaps{}, err
	}
	opts := secret.Options{File: filepath.Join(dir, "secrets.json"), Logger: e.log}
	if os.Getenv("NO_KEYRING") != "" {
		opts.Keychain = noKeychain{}
	}
	return edit.Snaps{Root: filepath.Join(dir, "snapshots"), Vault: secret.Open(opts)}, nil
}

// noKeychain is a keychain that is never there (NO_KEYRING=1), as the
// hub's.
type noKeychain struct{}

var errNoKeychain = errors.New("the keychain is turned off (NO_KEYRING=1)")

func (noKeychain) Get(string, string) (string, error) { return "", errNoKeychain }
func (noKeychain) Set(string, string, string) error   { return errNoKeychain }
func (noKeychain) Delete(string, string) error        { return errNoKeychain }

// hubSources are the sources of the hub.
func (e *env) hubSources(ctx context.Context) ([]model.Source, error) {
	h, _, err := e.openHub()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	var out []model.Source
	for _, r := range recs {
		out = append(out, r.Source)
	}
	return out, nil
}

// instruction is what to add by hand to a harness connect does not write.
type instruction struct {
	Harness string `json:"harness"`
	Path    string `json:"path"`
	Key     string `json:"key"`   // where the entry goes
	Entry   string `json:"entry"` // the text to add, in the file's format
}

// instructions lists the harnesses connect does not write whose config (or
// its directory) exists, or that are named in clients, with the entry to
// add by hand.
func instructions(clients []string, bin, profile string, vars map[string]string) []instruction {
	env, err := harness.FromOS()
	if err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, c := range clients {
		want[c] = true
	}
	var out []instruction
	for _, h := range harness.All() {
		if h.Connect || (len(want) > 0 && !want[h.Name]) {
			continue
		}
		for _, f := range h.Files(env) {
			if f.Project {
				continue
			}
			_, ferr := os.Stat(f.Path)
			_, derr := os.Stat(filepath.Dir(f.Path))
			if ferr != nil && !want[h.Name] && (derr != nil || filepath.Dir(f.Path) == env.Home) {
				continue
			}
			out = append(out, instruction{Harness: h.Name, Path: f.Path, Key: strings.Join(f.ServersKey, "."), Entry: entryText(f.Format, bin, profile, vars)})
			break // the first file the harness reads is enough
		}
	}
	return out
}

// entryText is the hub's entry written as the harness's format wants it.
func entryText(format harness.Format, bin, profile string, env map[string]string) string {
	entryName, args := profileEntry(profile)
	if format == harness.YAML {
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = q(a)
		}
		text := fmt.Sprintf("%s:\n  command: %s\n  args: [%s]\n", entryName, q(bin), strings.Join(quoted, ", "))
		if len(env) > 0 {
			text += "  env:\n"
			keys := make([]string, 0, len(env))
			for k := range env {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				text += fmt.Sprintf("    %s: %s\n", k, q(env[k]))
			}
		}
		return text
	}
	value := map[string]any{"command": bin, "args": args}
	if len(env) > 0 {
		value["env"] = env
	}
	b, _ := json.MarshalIndent(map[string]any{entryName: value}, "", "  ")
	text := strings.TrimSpace(string(b))
	text = strings.TrimSuffix(strings.TrimPrefix(text, "{"), "}")
	return strings.TrimSpace(dedent(text)) + "\n"
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// dedent takes one level (two blanks) off every line.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "  ")
	}
	return strings.Join(lines, "\n")
}

// profileEntry is the name and arguments of a profile's entry: default's
// is capabilities, another's capabilities-<profile>, so both can be there.
func profileEntry(profile string) (name string, args []string) {
	name = entryName
	if profile != hub.DefaultProfile {
		name += "-" + profile
	}
	return name, []string{"hub", "serve", "--stdio", "--profile", profile}
}

// checkProfile refuses a profile the hub does not have.
func (e *env) checkProfile(ctx context.Context, profile string) error {
	if err := hub.ValidProfileName(profile); err != nil {
		return usagef("--profile: %v", err)
	}
	h, _, err := e.openHub()
	if err != nil {
		return err
	}
	defer h.Close()
	if _, err := h.Profile(ctx, profile); err != nil {
		return fmt.Errorf("connect --profile: %w", err)
	}
	return nil
}

// connectEntry is the hub's entry in the harness's own shape; env (the
// hub's CAPABILITIES_HOME, see hubEnv) goes into its "env" object (Codex:
// an env inline table), which every harness connect writes reads.
// entryKeys are the keys of the hub's entry that connect writes: an update
// sets them (or takes them out), and keeps the others the person added
// (Codex's startup_timeout_sec, Gemini's timeout or trust).
var entryKeys = []string{"type", "command", "args", "env"}

func connectEntry(h, bin, profile string, env map[string]string) edit.Entry {
	_, args := profileEntry(profile)
	var e edit.Entry
	switch h {
	case "claude-code", "vscode":
		e = edit.Entry{{Key: "type", Value: "stdio"}}
	}
	e = append(e, edit.Field{Key: "command", Value: bin}, edit.Field{Key: "args", Value: args})
	if len(env) > 0 {
		e = append(e, edit.Field{Key: "env", Value: env})
	}
	return e
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
		if _, ok := harness.Lookup(c); !ok {
			return nil, usagef("--client %q: not a harness (one of %s)", c, strings.Join(harness.Names(), ", "))
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

// selfCommand is the absolute path of this binary as it was started (a
// symlink such as /usr/local/bin/capabilities is kept): the command
// connect writes.
func selfCommand() (string, error) {
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
	return p, nil
}

// selfPath is selfCommand, checked: it exists, is executable, and answers
// --version.
func selfPath(ctx context.Context) (string, error) {
	p, err := selfCommand()
	if err != nil {
		return "", err
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
