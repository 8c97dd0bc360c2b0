package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/capabilities-sh/capabilities/engine/catalog"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

func newStackInstallCmd(e *env) *cobra.Command {
	var yes, asJSON bool
	var ns string
	c := &cobra.Command{
		Use:   "install <slug>",
		Short: "Install a capability from the catalog into the hub, pinned in capabilities.lock",
		Long: `Install the capability the catalog (--registry <folder|URL>, or $CAPABILITIES_REGISTRY) lists
under <slug>, and record it in $CAPABILITIES_HOME/stack/capabilities.lock, pinned (the npm
version and its integrity, the remote URL and the digest of its tool list, or the skill's commit
and the digest of its files) with every place it wrote.

A server (shape npm or remote) is added as a hub source exactly as 'hub add' adds one: the hub
starts it (npx -y <package>@<version>) or connects to it, lists its tools itself, shows them and
asks before storing anything; then its review (read-only tools allowed, the others ask). The
catalog grants nothing: what it says of a server is where to find it. A secret the catalog names
is read from the environment, the keychain or ~/.capabilities/.env, else asked at a masked prompt;
with --no-input a missing one fails, naming it, and nothing is installed.

A skill (shape skill) is fetched from its git repository at the pinned commit and copied into the
hub's skills; 'capabilities hub connect' installs it into your agents.

Agents connected to the hub ('capabilities hub connect') reach an installed server through the
hub at once: install writes no agent config. docs/catalog.md describes index.json and the lock.`,
		Example: `  capabilities --registry ./catalog stack install memory
  capabilities --registry https://example.org/catalog --no-input stack install github --yes`,
		Args: exactArgs(1, "one slug of the catalog"),
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON && !yes {
				return usagef("--json needs --yes: the JSON form does not prompt")
			}
			if e.noInput && !yes {
				return usagef("--no-input needs --yes: installing asks you to accept what the hub found (the server's tools, or the skill's files); pass --yes to accept the review's proposal")
			}
			loc := e.catalog()
			if loc == "" {
				return usagef("no catalog: pass --registry <folder|URL> (before the command) or set CAPABILITIES_REGISTRY")
			}
			ctx := c.Context()
			cat, err := catalog.Read(ctx, loc)
			if err != nil {
				return err
			}
			ent, err := cat.Lookup(args[0])
			if err != nil {
				return &codedError{code: codeNotFound, err: fmt.Errorf("installing: %w", err)}
			}
			if ns != "" {
				if ent.Shape == catalog.ShapeSkill {
					return usagef("--namespace is for a server; %s is a skill (named by its SKILL.md)", ent.Slug)
				}
				if err := model.NewNamespace(ns); err != nil {
					return usagef("--namespace: %v", err)
				}
			}
			lockPath, mutex, err := lockPaths()
			if err != nil {
				return err
			}
			return catalog.Guard(ctx, mutex, func() error {
				l, err := catalog.ReadLock(lockPath)
				if err != nil {
					return err
				}
				for _, have := range l.Capabilities {
					if have.Slug == ent.Slug {
						return fmt.Errorf("installing %s: it is installed already (%s); uninstall it first: capabilities stack uninstall %s", ent.Slug, placesOf(&have), ent.Slug)
					}
				}
				h, _, err := e.openHub(e.startOptions())
				if err != nil {
					return err
				}
				defer h.Close()
				in := installing{e: e, h: h, cat: cat, ent: ent, yes: yes, asJSON: asJSON, ns: ns, registry: loc}
				if !strings.Contains(loc, "://") {
					if abs, err := filepath.Abs(loc); err == nil {
						in.registry = abs // the lock says where from, wherever it is read
					}
				}
				var rec *catalog.Locked
				if ent.Shape == catalog.ShapeSkill {
					rec, err = in.skill(ctx)
				} else {
					rec, err = in.server(ctx)
				}
				if err != nil || rec == nil {
					return err
				}
				l.Capabilities = append(l.Capabilities, *rec)
				if err := catalog.WriteLock(lockPath, l); err != nil {
					msgs := undoInstall(ctx, h, rec)
					return fmt.Errorf("installing %s: recording it in %s failed, so it was taken out of the hub again%s: %w", ent.Slug, lockPath, strings.Join(msgs, ""), err)
				}
				if asJSON {
					return e.printJSON(map[string]any{"installed": rec, "lock": lockPath})
				}
				fmt.Fprintf(e.stdout, "Installed %s (%s), pinned in %s.\n", ent.Slug, placesOf(rec), lockPath)
				if ent.Shape == catalog.ShapeSkill {
					fmt.Fprintln(e.stdout, "`capabilities hub connect` installs the skill into your agents.")
				}
				return nil
			})
		},
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "install without asking, accepting the review's proposal")
	c.Flags().BoolVar(&asJSON, "json", false, "print the lock entry as JSON (needs --yes)")
	c.Flags().StringVar(&ns, "namespace", "", "add a server under `NAMESPACE` (default: the catalog's, else the slug)")
	return c
}

// lockPaths are the lockfile ($CAPABILITIES_HOME/stack/capabilities.lock)
// and the file install and uninstall lock while they change it (in the
// hub's locks folder, out of the stack's git work tree).
func lockPaths() (lock, mutex string, err error) {
	home, err := store.Home()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(home, "stack", catalog.LockFile), filepath.Join(home, "hub", "locks", "capabilities-lockfile.lock"), nil
}

// placesOf names where a locked capability lives, for a person.
func placesOf(rec *catalog.Locked) string {
	var out []string
	for _, p := range rec.Wrote {
		switch p.Kind {
		case catalog.PlaceSource:
			out = append(out, "hub source "+p.Name)
		case catalog.PlaceSkill:
			out = append(out, "hub skill "+p.Name)
		}
	}
	return strings.Join(out, ", ")
}

// installing is one stack install under way.
type installing struct {
	e      *env
	h      *hub.Hub
	cat    *catalog.Catalog
	ent    *catalog.Entry
	yes    bool
	asJSON bool
	ns     string // --namespace
	// registry is the catalog's location for the lock (a folder made
	// absolute).
	registry string
}

// server adds an npm or remote server as a hub source through the hub's
// own proposal and review, stores its secret, and returns its lock entry
// (nil when the person declined). Nothing stays in the hub when it fails.
func (in *installing) server(ctx context.Context) (rec *catalog.Locked, err error) {
	e, h, ent := in.e, in.h, in.ent
	ns := in.ns
	if ns == "" {
		ns = ent.HubNamespace()
	}
	var needs []secretNeed
	for _, name := range ent.Secrets {
		n := secretNeed{Namespace: ns, Connection: hub.DefaultConnection, Name: name}
		if ent.Shape == catalog.ShapeNPM {
			n.Env = name
		} else if ent.SecretHeader != "" && !strings.EqualFold(ent.SecretHeader, "Authorization") {
			n.Header = ent.SecretHeader
		}
		needs = append(needs, n)
	}
	// Before anything starts, each secret is looked up (the environment,
	// ~/.capabilities/.env) or asked at a masked prompt: a server may need
	// it to start or to list its tools. One found nowhere (with
	// --no-input, or an empty answer) fails now, naming it: nothing is
	// installed.
	values, from := map[string]string{}, map[string]string{}
	var missing []secretNeed
	var dotEnv map[string]string
	for _, n := range needs {
		v, w, err := e.findSecret(n, &dotEnv)
		if err != nil {
			return nil, fmt.Errorf("installing %s: %w; nothing installed", ent.Slug, err)
		}
		if v == "" {
			missing = append(missing, n)
			continue
		}
		values[n.Name], from[n.Name] = v, w
	}
	if len(missing) > 0 {
		names := make([]string, len(missing))
		for i, n := range missing {
			names[i] = n.String()
		}
		how := "or type it at the prompt"
		if e.noInput {
			how = "or run without --no-input to be asked"
		}
		return nil, fmt.Errorf("installing %s: missing %d secret(s): %s; set each in the environment or in ~/.capabilities/.env (NAME=value), %s; nothing installed", ent.Slug, len(missing), strings.Join(names, ", "), how)
	}
	if in.ns == "" {
		if have, err := sameSource(ctx, h, ent); err != nil {
			return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
		} else if have != "" {
			return nil, fmt.Errorf("installing %s: the hub already has this server as %s, added another way; to have the lock pin it, remove it (`capabilities hub remove %s`) and install again, or install a second copy with --namespace", ent.Slug, have, have)
		}
	}
	req := hub.AddRequest{Namespace: ns}
	switch ent.Shape {
	case catalog.ShapeNPM:
		req.Command = ent.Command()
		if len(needs) > 0 {
			req.SecretEnv = needs[0].Env
		}
	case catalog.ShapeRemote:
		req.URL = ent.URL
		if len(needs) > 0 {
			req.SecretHeader = needs[0].Header
		}
	}
	if len(needs) > 0 {
		req.Secret = values[needs[0].Name] // to reach a server that wants it to list its tools
	}
	if !in.asJSON {
		fmt.Fprintf(e.stdout, "Installing %s from %s: %s\n", ent.Slug, in.cat.Location, ent.Pinned())
	}
	p, err := h.Propose(ctx, req)
	e.clearStatus()
	if err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	if !in.asJSON {
		printProposalTools(e, p, proposalTools, "")
	}
	if !in.yes {
		ok, err := confirm(e, fmt.Sprintf("Install it as %q? [y/N] ", ns))
		if err != nil {
			return nil, err
		}
		if !ok {
			fmt.Fprintln(e.stdout, "Nothing installed.")
			return nil, nil
		}
	}
	rec = &catalog.Locked{
		Slug: ent.Slug, Shape: ent.Shape, Registry: in.registry,
		Secrets:     ent.Secrets,
		ToolsDigest: toolsDigest(p.Manifest.Tools),
		InstalledAt: time.Now().UTC().Truncate(time.Second),
		Wrote:       []catalog.Place{{Kind: catalog.PlaceSource, Name: ns, Before: catalog.Absent}},
	}
	if ent.Shape == catalog.ShapeNPM {
		rec.Package, rec.Version, rec.Command = ent.Package, ent.Version, ent.Command()
		rec.Integrity, rec.IntegrityFrom, err = npmIntegrity(ctx, ent)
		if err != nil {
			return nil, fmt.Errorf("installing %s: %w; nothing installed", ent.Slug, err)
		}
	} else {
		rec.URL = p.Source.URL
	}
	if err := h.Accept(ctx, p); err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	defer func() {
		if err != nil {
			if rerr := h.Remove(context.WithoutCancel(ctx), ns); rerr != nil {
				err = fmt.Errorf("%w; taking %s out of the hub again failed too (run `capabilities hub remove %s`): %v", err, ns, ns, rerr)
			}
		}
	}()
	for _, n := range needs {
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: n.Namespace, Connection: n.Connection, Value: values[n.Name], Env: n.Env, Header: n.Header}); err != nil {
			return nil, fmt.Errorf("installing %s: storing %s: %w; nothing installed", ent.Slug, n, err)
		}
		if !in.asJSON {
			fmt.Fprintf(e.stdout, "  secret %s: stored for %s/%s (from the %s)\n", n.Name, n.Namespace, n.Connection, from[n.Name])
		}
	}
	if in.asJSON {
		r, err := h.PendingReview(ctx, ns)
		if err != nil {
			return nil, err
		}
		if err := h.AcceptReview(ctx, r, nil, "review"); err != nil {
			return nil, err
		}
		return rec, nil
	}
	fmt.Fprintf(e.stdout, "Added %s with %d tools.\n\n", ns, len(p.Manifest.Tools))
	show := printReview
	if len(p.Manifest.Tools) > proposalTools {
		show = printReviewCounts
	}
	if err := reviewWith(ctx, e, h, ns, in.yes, false, show); err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	return rec, nil
}

// sameSource is the namespace of a hub source that runs the entry's
// server (the same command and arguments, or the same URL), "" when none.
func sameSource(ctx context.Context, h *hub.Hub, ent *catalog.Entry) (string, error) {
	recs, err := h.Sources(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range recs {
		src := &r.Source
		switch ent.Shape {
		case catalog.ShapeNPM:
			if src.Kind == model.KindStdio && slices.Equal(append([]string{src.Command}, src.Args...), ent.Command()) {
				return src.Namespace, nil
			}
		case catalog.ShapeRemote:
			if src.Kind == model.KindHTTP && strings.TrimRight(src.URL, "/") == strings.TrimRight(ent.URL, "/") {
				return src.Namespace, nil
			}
		}
	}
	return "", nil
}

// toolsDigest is "sha256:<hex>" over each tool's upstream name and
// contract, sorted: the same tool list gives the same digest.
func toolsDigest(tools []model.Tool) string {
	lines := make([]string, len(tools))
	for i, t := range tools {
		lines[i] = t.Name + "\x00" + t.Contract + "\n"
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		sum.Write([]byte(l))
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// filesDigest is "sha256:<hex>" over each file's path and sha256, sorted.
func filesDigest(files map[string]string) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sum := sha256.New()
	for _, n := range names {
		fmt.Fprintf(sum, "%s\x00%s\n", n, files[n])
	}
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// npmViewTimeout bounds asking npm for a version's integrity.
const npmViewTimeout = 30 * time.Second

// npmIntegrity is the integrity of the entry's package version, with
// where it came from: the npm tree npx runs it from here ("npm-tree": the
// hidden lockfile node_modules/.package-lock.json, or package-lock.json, of
// this folder or one above holding that version, read offline), else what
// npm says ("npm": npm view <pkg>@<version> dist.integrity, from its cache
// or the registry), else the catalog's ("catalog"). Two of them known and
// different is an error: one is not the package it names.
func npmIntegrity(ctx context.Context, ent *catalog.Entry) (integrity, from string, err error) {
	said := []integritySaid{{from: "npm-tree"}, {from: "npm"}, {from: "catalog", value: ent.Integrity}}
	if wd, err := os.Getwd(); err == nil {
		said[0].value, said[0].where = treeIntegrity(wd, ent.Package, ent.Version)
	}
	if said[0].value == "" { // the registry only when this machine's tree does not say
		said[1].value, _ = npmView(ctx, ent.Package+"@"+ent.Version)
	}
	return pickIntegrity(ent, said)
}

// integritySaid is what one source says a package version's integrity is
// ("" when it does not say).
type integritySaid struct{ value, from, where string }

// pickIntegrity is the first integrity said, unless two differ.
func pickIntegrity(ent *catalog.Entry, said []integritySaid) (integrity, from string, err error) {
	var first *integritySaid
	for i := range said {
		s := &said[i]
		if s.value == "" {
			continue
		}
		if first == nil {
			first = s
			continue
		}
		if s.value != first.value {
			return "", "", fmt.Errorf("%s has the integrity %s by %s and %s by %s: one of them is not the package it names", ent.Package+"@"+ent.Version, first.value, first.describe(), s.value, s.describe())
		}
	}
	if first == nil {
		return "", "", nil // none: the lock pins the version alone
	}
	return first.value, first.from, nil
}

func (s *integritySaid) describe() string {
	switch s.from {
	case "npm-tree":
		return s.where
	case "npm":
		return "npm view"
	}
	return "the catalog"
}

// treeIntegrity looks in dir and each folder above it for an npm lockfile
// (node_modules/.package-lock.json, then package-lock.json) that installs
// pkg at version, and returns its integrity and the lockfile's path.
func treeIntegrity(dir, pkg, version string) (integrity, lockfile string) {
	for {
		for _, name := range []string{filepath.Join("node_modules", ".package-lock.json"), "package-lock.json"} {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil || len(b) > 64<<20 {
				continue
			}
			var lock struct {
				Packages map[string]struct {
					Version   string `json:"version"`
					Integrity string `json:"integrity"`
				} `json:"packages"`
			}
			if json.Unmarshal(b, &lock) != nil {
				continue
			}
			if e, ok := lock.Packages["node_modules/"+pkg]; ok && e.Version == version && e.Integrity != "" {
				return e.Integrity, p
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", ""
		}
		dir = up
	}
}

// npmView asks npm for a version's dist.integrity, without retrying.
func npmView(ctx context.Context, spec string) (string, error) {
	if _, err := exec.LookPath("npm"); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, npmViewTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "view", "--json", "--fetch-retries=0", "--", spec, "dist.integrity")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("npm view %s: %w", spec, err)
	}
	var s string
	if err := json.Unmarshal(out, &s); err != nil || s == "" {
		return "", fmt.Errorf("npm view %s: no dist.integrity in its answer", spec)
	}
	return s, nil
}

// skill fetches the entry's skill at its commit, shows it, copies it into
// the hub's skills and returns its lock entry (nil when declined).
func (in *installing) skill(ctx context.Context) (*catalog.Locked, error) {
	e, ent := in.e, in.ent
	st, err := skillStore(in.h)
	if err != nil {
		return nil, err
	}
	if !in.asJSON {
		fmt.Fprintf(e.stdout, "Installing %s from %s: %s\n", ent.Slug, in.cat.Location, ent.Pinned())
	}
	dir, full, cleanup, err := skill.FromGit(ctx, st.Dir, ent.Repo, ent.Commit, ent.Path)
	if err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	defer cleanup()
	if full != ent.Commit {
		return nil, fmt.Errorf("installing %s: the repository resolves the commit %s to %s; the catalog must pin a full commit", ent.Slug, ent.Commit, full)
	}
	s, err := skill.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	if _, err := st.Get(s.Name); err == nil {
		return nil, fmt.Errorf("installing %s: the hub has a skill %s already; remove it first (`capabilities hub skills remove %s`) or uninstall what installed it", ent.Slug, s.Name, s.Name)
	}
	if !in.asJSON {
		fmt.Fprintf(e.stdout, "Found the skill %s (%s): %s\n", s.Name, plural(len(s.Files), "file"), firstSentence(s.Description))
		for _, f := range s.Files {
			fmt.Fprintf(e.stdout, "    %s\n", f)
		}
	}
	if !in.yes {
		ok, err := confirm(e, fmt.Sprintf("Install the skill %s into the hub? [y/N] ", s.Name))
		if err != nil {
			return nil, err
		}
		if !ok {
			fmt.Fprintln(e.stdout, "Nothing installed.")
			return nil, nil
		}
	}
	if err := st.Add(s, skill.Origin{Git: ent.Repo, Commit: full, Subdir: ent.Path}); err != nil {
		return nil, fmt.Errorf("installing %s: %w", ent.Slug, err)
	}
	dst := filepath.Join(st.Dir, s.Name)
	where := dst // in the lock: relative to $CAPABILITIES_HOME, the same on every machine
	if home, err := store.Home(); err == nil {
		if rel, err := filepath.Rel(home, dst); err == nil && !strings.HasPrefix(rel, "..") {
			where = filepath.ToSlash(rel)
		}
	}
	files := map[string]string{}
	for _, f := range s.Files {
		b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(f)))
		if err != nil {
			_ = st.Remove(s.Name)
			return nil, fmt.Errorf("installing %s: reading the hub's copy: %w", ent.Slug, err)
		}
		sum := sha256.Sum256(b)
		files[f] = hex.EncodeToString(sum[:])
	}
	return &catalog.Locked{
		Slug: ent.Slug, Shape: ent.Shape, Registry: in.registry,
		Repo: ent.Repo, Commit: full, Path: ent.Path, FilesDigest: filesDigest(files),
		InstalledAt: time.Now().UTC().Truncate(time.Second),
		Wrote:       []catalog.Place{{Kind: catalog.PlaceSkill, Name: s.Name, Path: where, Before: catalog.Absent, Files: files}},
	}, nil
}

// undoInstall takes out of the hub what rec says install wrote, returning
// a note for each place it could not.
func undoInstall(ctx context.Context, h *hub.Hub, rec *catalog.Locked) []string {
	var msgs []string
	for _, p := range rec.Wrote {
		var err error
		switch p.Kind {
		case catalog.PlaceSource:
			err = h.Remove(context.WithoutCancel(ctx), p.Name)
		case catalog.PlaceSkill:
			var st skill.Store
			if st, err = skillStore(h); err == nil {
				err = st.Remove(p.Name)
			}
		}
		if err != nil && !errors.Is(err, skill.ErrNotFound) {
			msgs = append(msgs, fmt.Sprintf(" (but not %s: %v)", p.Name, err))
		}
	}
	return msgs
}
