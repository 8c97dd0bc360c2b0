package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	var dryRun, asJSON, replace, tokenStdin bool
	var hubURL string
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
optionally with "--profile NAME" and then "--hub URL", with no env other than CAPABILITIES_HOME; connect updates
such an entry. Connect names each config it left, with the entry's command or URL (credential
values masked): remove that entry and run connect again to have connect write its own. Connect
exits 0 when it wrote (or found already written) its entry in at least one config; when every
config it found has such an entry of its own, it exits 1 and says so. Disconnect never takes out
an entry that is not connect's: it leaves it, and says so.

Antigravity, Hermes and pi are not written: connect prints the entry to add and where.

With --hub URL, the entries reach a hub on another machine (a server, docs/serve-http.md)
instead of this machine's: each runs "hub serve --stdio --hub URL", which relays the agent's
session to URL/mcp. Connect first reads the hub's bearer token (--token-stdin, else
CAPABILITIES_HUB_TOKEN, else a masked prompt; 'capabilities hub http-token' on the server
prints it), checks it against the hub (an MCP initialize: a refused token or a hub that does
not answer writes nothing), and keeps it in this machine's secret store (the OS keychain),
keyed by the URL's host: never in an agent's config. The URL is https, or http to a
loopback host only.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			files, err := connectTargets(clients, true)
			if err != nil {
				return err
			}
			remote, token, host := "", "", ""
			if c.Flags().Changed("hub") {
				if replace {
					return usagef("--replace goes without --hub: the servers it turns off are this machine's hub's")
				}
				if err := hub.ValidProfileName(profile); err != nil {
					return usagef("--profile: %v", err)
				}
				base, h, err := remoteHub("--hub", hubURL)
				if err != nil {
					return err
				}
				if token, err = e.remoteToken(tokenStdin, h); err != nil {
					return err
				}
				if err := checkRemoteHub(c.Context(), base, profile, token); err != nil {
					return err
				}
				remote, host = base.String(), h
			} else if tokenStdin {
				return usagef("--token-stdin goes with --hub URL")
			}
			bin, err := selfPath(c.Context())
			if err != nil {
				return err
			}
			env, err := hubEnv()
			if err != nil {
				return err
			}
			if profile != hub.DefaultProfile && remote == "" {
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
				changes = append(changes, connectChangeTo(f, bin, bins, sources, profile, remote, env))
			}
			if remote == "" {
				installs, err := e.profileSkillInstalls(c.Context(), files, profile)
				if err != nil {
					return err
				}
				changes = append(changes, installs...)
			} else if !dryRun {
				where, err := e.storeHubToken(c.Context(), host, token)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stderr, "capabilities: the token of the hub at %s is in %s (never in an agent's config)\n", remote, where)
			}
			name, _ := profileEntry(profile)
			own := ownLookup(files, []string{name}, bins)
			return e.applyEdits("connect", files, changes, dryRun, asJSON, instructions(clients, bin, profile, remote, env), own, bins)
		},
	}
	c.Flags().StringSliceVar(&clients, "client", nil, "only these harnesses (`NAMES`, comma-separated: "+strings.Join(writableNames(), ",")+")")
	c.Flags().BoolVar(&replace, "replace", false, "also turn off the agents' own entries for servers the hub has")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show what would change (credential values masked), write nothing")
	c.Flags().StringVar(&profile, "profile", hub.DefaultProfile, "write the entry of profile `NAME` (named capabilities-NAME; default's is capabilities)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().StringVar(&hubURL, "hub", "", "reach the hub at `URL` on another machine (https; its token goes to this machine's keychain)")
	c.Flags().BoolVar(&tokenStdin, "token-stdin", false, "with --hub, read the hub's bearer token from standard input")
	return c
}

// connectChange writes the hub's entry into f and, when sources are given
// (--replace), turns off f's entries that run one of them. A file that
// holds an entry of that name that is not ours (the person's own, see
// isHubEntry: bins) is left as it is, whole.
func connectChange(f harness.File, bin string, bins []string, sources []model.Source, profile string, env map[string]string) edit.Change {
	return connectChangeTo(f, bin, bins, sources, profile, "", env)
}

// connectChangeTo is connectChange for the hub at remote ("": this
// machine's).
func connectChangeTo(f harness.File, bin string, bins []string, sources []model.Source, profile, remote string, env map[string]string) edit.Change {
	entry := connectEntryTo(f.Harness, bin, profile, remote, env)
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

// profileEntry is the name and arguments of a profile's entry: default's
// is capabilities, another's capabilities-<profile>, so both can be there.
func profileEntry(profile string) (name string, args []string) {
	name = entryName
	if profile != hub.DefaultProfile {
		name += "-" + profile
	}
	return name, []string{"hub", "serve", "--stdio", "--profile", profile}
}

// entryArgs are the arguments of a profile's entry for the hub at remote
// ("": this machine's).
func entryArgs(profile, remote string) []string {
	_, args := profileEntry(profile)
	if remote != "" {
		args = append(args, "--hub", remote)
	}
	return args
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

// connectEntryTo is the hub's entry (at remote; "": this machine's) in the harness's own shape; env (the
// hub's CAPABILITIES_HOME, see hubEnv) goes into its "env" object (Codex:
// an env inline table), which every harness connect writes reads.
// entryKeys are the keys of the hub's entry that connect writes: an update
// sets them (or takes them out), and keeps the others the person added
// (Codex's startup_timeout_sec, Gemini's timeout or trust).
var entryKeys = []string{"type", "command", "args", "env"}

func connectEntryTo(h, bin, profile, remote string, env map[string]string) edit.Entry {
	args := entryArgs(profile, remote)
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
