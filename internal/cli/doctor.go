package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// Kinds of problems `capabilities doctor` finds. They are stable: scripts
// match on them.
const (
	probStore         = "store"           // the hub's folder: a mode, a file that cannot be read
	probSource        = "source"          // a source the hub cannot use (unreadable, its last contact failed)
	probMissingSecret = "missing-secret"  // a connection's secret is not in the secret store, or a credential has no connection
	probSignIn        = "sign-in"         // an OAuth connection whose tokens were refused
	probSecretStore   = "secret-store"    // the secret store could not be read
	probConfigSyntax  = "config-syntax"   // an agent's config does not parse
	probConfigEntry   = "config-entry"    // an entry (or the servers key) of an agent's config is not understood
	probCommand       = "missing-command" // an entry's (or a source's) command does not exist
	probHubBinary     = "hub-binary-gone" // a hub entry runs a capabilities binary that is gone
	probProfileGone   = "profile-gone"    // a hub entry serves a profile the hub no longer has
	probStack         = "stack"           // the stack's files cannot be read
)

// problem is one thing `capabilities doctor` found wrong, and how to fix it.
type problem struct {
	Kind       string `json:"kind"`
	Harness    string `json:"harness,omitempty"`
	Path       string `json:"path,omitempty"`
	Line       int    `json:"line,omitempty"`
	Column     int    `json:"column,omitempty"`
	Entry      string `json:"entry,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Connection string `json:"connection,omitempty"`
	// Secret is the secret's NAME (an environment variable's), never its
	// value.
	Secret  string `json:"secret,omitempty"`
	Message string `json:"message"`
	// Fix is what to do: the exact command where there is one.
	Fix string `json:"fix"`
}

// doctorReport is what `capabilities doctor --json` prints.
type doctorReport struct {
	Problems []problem `json:"problems"`
	Checked  struct {
		Hub     string     `json:"hub"`
		Store   *storeInfo `json:"store,omitempty"` // a database store (--store): where, schema, reachable
		Secrets string     `json:"secrets"`
		Sources int        `json:"sources"`
		Skills  int        `json:"skills"`
		Configs []string   `json:"configs"`
		Stack   int        `json:"stackSources"`
		// Connected says whether each source was started (--sources).
		Connected bool `json:"connected"`
	} `json:"checked"`
}

func newCensusDoctorCmd(e *env) *cobra.Command {
	var asJSON, connect bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Find missing secrets and broken agent configs, and say how to fix each",
		Long: `Check the hub and every agent's config, statically (nothing is started or written):

  missing secrets   a connection whose secret is not in the secret store; a source that reads
                    a credential (--secret-env) or signs in with OAuth and has no connection;
                    a connection the stack (sources/*.json) names that this hub lacks
  agent configs     a file that does not parse (with line and column); an entry not understood;
                    an entry whose command is not on the PATH or not a file; a hub entry whose
                    capabilities binary is gone, or that serves a profile the hub no longer has
  the hub           the store's modes, unreadable sources, sources whose last contact failed,
                    a stdio source whose command is gone

Each problem says how to fix it, with the exact command where there is one. --sources also
starts every source and lists its tools, as hub doctor does. Exit 1 when there is a problem.

--json prints {"problems": [{kind, harness, path, line, column, entry, namespace, connection,
secret, message, fix}], "checked": {hub, secrets, sources, skills, configs, stackSources,
connected}}; kind is one of store, source, missing-secret, sign-in, secret-store,
config-syntax, config-entry, missing-command, hub-binary-gone, profile-gone, stack. A secret
is named, never shown.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, st hubStore) error {
			r, err := e.doctor(c.Context(), h, st, connect)
			if err != nil {
				return err
			}
			if asJSON {
				if err := e.printJSON(r); err != nil {
					return err
				}
			} else {
				e.printDoctor(r)
			}
			if n := len(r.Problems); n > 0 {
				err := fmt.Errorf("doctor found %d problem(s)", n)
				if asJSON {
					return errSilent{err}
				}
				return err
			}
			return nil
		}),
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (fields documented in --help)")
	c.Flags().BoolVar(&connect, "sources", false, "also start every source and list its tools (as hub doctor does)")
	return c
}

func (e *env) doctor(ctx context.Context, h *hub.Hub, st hubStore, connect bool) (*doctorReport, error) {
	r := &doctorReport{Problems: []problem{}}
	r.Checked.Configs = []string{}
	r.Checked.Hub, r.Checked.Connected = st.Dir(), connect
	r.Checked.Secrets = h.SecretStatus()
	add := func(p problem) { r.Problems = append(r.Problems, p) }
	if si := describeStore(ctx, st); si != nil {
		r.Checked.Store = si
		if !si.Reachable {
			add(problem{Kind: probStore, Message: fmt.Sprintf("the hub's database at %s does not answer: %s", si.Database, si.Error), Fix: "start PostgreSQL, or fix the store URL (--store, CAPABILITIES_STORE)"})
		}
	}
	cs, err := readCensus()
	if err != nil {
		return nil, err
	}

	// The hub: its store, its sources.
	modes, _ := store.CheckModes(st.Dir())
	for _, m := range modes {
		add(problem{Kind: probStore, Path: st.Dir(), Message: m, Fix: "restrict it to its owner, as the message says (folders 700, files 600)"})
	}
	recs, err := h.Sources(ctx)
	if err != nil {
		return nil, err
	}
	r.Checked.Sources = len(recs)
	bad, err := h.Unreadable(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range bad {
		add(problem{Kind: probSource, Namespace: b.Namespace, Message: fmt.Sprintf("%s is left out of the hub: %v", b.Namespace, b.Err), Fix: b.Fix()})
	}
	if connect {
		dr, err := h.Doctor(ctx)
		if err != nil {
			return nil, err
		}
		for _, s := range dr.Sources {
			if s.Health != "ok" && !slicesHasNamespace(bad, s.Namespace) {
				msg := fmt.Sprintf("%s does not start: %s", s.Namespace, s.Error)
				if s.Stderr != "" {
					msg += "; its stderr ends: " + strings.ReplaceAll(s.Stderr, "\n", " | ")
				}
				add(problem{Kind: probSource, Namespace: s.Namespace, Message: msg, Fix: fmt.Sprintf("fix what the error says, then `capabilities hub refresh %s`", s.Namespace)})
			}
		}
	} else {
		for _, rec := range recs {
			if m := rec.Manifest; m != nil && m.Health == "error" {
				add(problem{Kind: probSource, Namespace: rec.Source.Namespace,
					Message: fmt.Sprintf("the last contact with %s failed: %s", rec.Source.Namespace, h.Scrub(m.LastError)),
					Fix:     fmt.Sprintf("`capabilities doctor --sources` starts it now and shows why; `capabilities hub refresh %s` once it is fixed", rec.Source.Namespace)})
			}
		}
	}
	for _, rec := range recs {
		src := rec.Source
		if src.Kind != model.KindStdio {
			continue
		}
		s := harness.Server{Name: src.Namespace, Kind: harness.KindStdio, Command: src.Command, Args: src.Args, Env: src.Env, Cwd: src.Cwd}
		if why := harness.MissingCommand(cs.env, s); why != "" {
			add(problem{Kind: probCommand, Namespace: src.Namespace,
				Message: fmt.Sprintf("the source %s runs %s: %s", src.Namespace, src.Command, why),
				Fix:     fmt.Sprintf("install %s (or put it on the PATH), or `capabilities hub remove %s` and add it again with the right command", src.Command, src.Namespace)})
		}
	}
	if sk, ok := h.Skills(); ok {
		if all, err := sk.List(); err == nil {
			r.Checked.Skills = len(all)
		} else {
			add(problem{Kind: probStore, Path: sk.Dir, Message: fmt.Sprintf("the hub's skills cannot be read: %v", err), Fix: "fix or remove the skill folder the message names"})
		}
	}

	// Secrets: each connection's, each source that needs one, each the
	// stack names.
	reported := map[string]bool{}
	byNS := map[string]*model.Source{}
	for i := range recs {
		byNS[recs[i].Source.Namespace] = &recs[i].Source
	}
	stack, badStack, err := stackSources()
	if err != nil {
		return nil, err
	}
	r.Checked.Stack = len(stack)
	// What the stack calls each connection's secret, and where it goes.
	inStack := map[string]stackConnection{}
	for _, ss := range stack {
		for _, sc := range ss.Connections {
			inStack[ss.Namespace+"/"+firstNonEmpty(sc.Name, hub.DefaultConnection)] = sc
		}
	}
	need := func(src *model.Source, conn, what string, oauth bool) problem {
		sc := inStack[src.Namespace+"/"+conn]
		return missingSecret(src, conn, firstNonEmpty(sc.Secret, secretName(src)), firstNonEmpty(sc.Env, envOf(src)), firstNonEmpty(sc.Header, headerOf(src)), oauth, what)
	}
	for _, rec := range recs {
		src := rec.Source
		conns, err := h.Connections(ctx, src.Namespace)
		if err != nil {
			return nil, err
		}
		for _, conn := range conns.Items {
			key := src.Namespace + "/" + conn.Name
			if conn.SignIn != "" {
				reported[key] = true
				add(problem{Kind: probSignIn, Namespace: src.Namespace, Connection: conn.Name,
					Message: fmt.Sprintf("%s: %s", key, conn.SignIn), Fix: "sign in again: `" + authCommand(&src, conn.Name, "", "", true) + "`"})
				continue
			}
			_, gerr := h.Secrets().Get(secret.Quiet(ctx), conn.SecretRef)
			switch {
			case gerr == nil:
			case errors.Is(gerr, secret.ErrNotFound):
				reported[key] = true
				add(need(&src, conn.Name, fmt.Sprintf("%s: its secret is not in the secret store", key), conn.Auth == model.AuthOAuth))
			default:
				reported[key] = true
				add(problem{Kind: probSecretStore, Namespace: src.Namespace, Connection: conn.Name,
					Message: fmt.Sprintf("%s: its secret could not be read: %v", key, gerr), Fix: "check the keychain (`capabilities hub doctor` says where secrets live), then run doctor again"})
			}
		}
		oauth := src.Auth == model.AuthOAuth
		if len(conns.Items) == 0 && (src.SecretEnv != "" || oauth) {
			key := src.Namespace + "/" + hub.DefaultConnection
			reported[key] = true
			what := fmt.Sprintf("%s reads its credential from $%s but has no connection: no credential was stored", src.Namespace, src.SecretEnv)
			if oauth {
				what = fmt.Sprintf("%s signs in with OAuth, and nobody has signed in", src.Namespace)
			}
			add(need(&src, hub.DefaultConnection, what, oauth))
		}
	}
	for _, p := range sortedErrKeys(badStack) {
		add(problem{Kind: probStack, Path: p, Message: fmt.Sprintf("the stack's %s cannot be read: %v", p, badStack[p]),
			Fix: "fix the file, or take the stack repository's version again (git -C " + quoteArg(stackDirOrEmpty()) + " checkout -- sources)"})
	}
	for _, ss := range stack {
		for _, sc := range ss.Connections {
			name := sc.Name
			if name == "" {
				name = hub.DefaultConnection
			}
			key := ss.Namespace + "/" + name
			if reported[key] || h.ConnectionReady(ctx, ss.Namespace, name) {
				continue
			}
			reported[key] = true
			src := byNS[ss.Namespace]
			what := "secret " + orName(sc.Secret)
			if sc.Auth == model.AuthOAuth {
				what = "an OAuth sign-in"
			}
			if src == nil {
				fix := "`capabilities stack pull` adds it (and asks for " + orName(sc.Secret) + ")"
				if sc.Auth == model.AuthOAuth {
					fix = "`capabilities stack pull` adds it; then sign in: `capabilities hub auth " + ss.Namespace + "`"
				}
				add(problem{Kind: probMissingSecret, Namespace: ss.Namespace, Connection: name, Secret: sc.Secret, Path: ss.Path,
					Message: fmt.Sprintf("the stack's source %s (connection %s, %s) is not in this hub", ss.Namespace, name, what), Fix: fix})
				continue
			}
			p := need(src, name, fmt.Sprintf("the stack names the connection %s (%s), which this hub does not have", key, what), src.Auth == model.AuthOAuth || sc.Auth == model.AuthOAuth)
			p.Path = ss.Path
			add(p)
		}
	}
	if _, _, lerr := lockSlugs(); lerr != nil {
		add(problem{Kind: probStack, Message: lerr.Error(), Fix: "take the stack repository's version again (git -C " + quoteArg(stackDirOrEmpty()) + " checkout -- capabilities.lock)"})
	}

	// The agents' configs.
	seenPath := map[string]bool{}
	profiles := map[string]bool{}
	for _, cf := range cs.configs {
		f := cf.File
		if !seenPath[f.Path] {
			seenPath[f.Path] = true
			r.Checked.Configs = append(r.Checked.Configs, f.Path)
		}
		if cf.Err != nil {
			p := problem{Kind: probConfigSyntax, Harness: f.Harness, Path: f.Path}
			var se *harness.SyntaxError
			if errors.As(cf.Err, &se) {
				p.Line, p.Column = se.Line, se.Col
				p.Message = fmt.Sprintf("%s: %s does not parse as %s: %v", f.Harness, f.Path, strings.ToUpper(string(f.Format)), se)
				p.Fix = fmt.Sprintf("correct %s at %s (the agent cannot read it either); `capabilities rollback` restores it if hub connect wrote it last", f.Path, position(se))
			} else {
				p.Message = fmt.Sprintf("%s: %s cannot be read: %v", f.Harness, f.Path, cf.Err)
				p.Fix = "make the file readable by you (and only you), or remove it"
			}
			add(p)
			continue
		}
		if cf.KeyErr != nil {
			add(problem{Kind: probConfigEntry, Harness: f.Harness, Path: f.Path, Message: fmt.Sprintf("%s: %s: %v", f.Harness, f.Path, cf.KeyErr),
				Fix: fmt.Sprintf("make %s an object of servers, name → entry", strings.Join(f.ServersKey, "."))})
		}
		for _, pr := range cf.Problems {
			add(problem{Kind: probConfigEntry, Harness: f.Harness, Path: f.Path, Entry: pr.Server,
				Message: fmt.Sprintf("%s: the entry %q of %s is not understood: %v", f.Harness, pr.Server, f.Path, pr.Err),
				Fix:     fmt.Sprintf("correct or remove the %q entry of %s", pr.Server, f.Path)})
		}
		for _, raw := range cf.Servers {
			s := harness.ExpandServer(cs.env, f, raw)
			if isHubEntry(raw, cs.bins) {
				profile := harness.EntryProfile(raw.Args)
				again := fmt.Sprintf("`capabilities hub connect --client %s", f.Harness)
				if profile != hub.DefaultProfile {
					again += " --profile " + profile
				}
				again += "` writes this binary's path"
				if name, _ := profileEntry(profile); name != raw.Name {
					// connect writes the entry of the profile's name, not this one.
					again = fmt.Sprintf("remove the %q entry of %s (`capabilities hub disconnect --client %s` takes out every hub entry there), then `capabilities hub connect --client %s` writes the hub's entry again", raw.Name, f.Path, f.Harness, f.Harness)
				}
				if !f.Writable {
					again = fmt.Sprintf("set its command to %s in %s", orName(cs.self), f.Path)
				}
				if why := harness.MissingCommand(cs.env, s); why != "" {
					add(problem{Kind: probHubBinary, Harness: f.Harness, Path: f.Path, Entry: raw.Name,
						Message: fmt.Sprintf("%s: the hub's entry %q in %s runs a capabilities binary that is gone: %s", f.Harness, raw.Name, f.Path, why),
						Fix:     again})
				}
				if !cs.servesThisHub(raw) {
					continue // another hub's entry: its profiles are not this hub's
				}
				exists, seen := profiles[profile]
				if !seen {
					_, perr := h.Profile(ctx, profile)
					if perr != nil && !errors.Is(perr, hub.ErrUnknownProfile) {
						return nil, perr
					}
					exists = perr == nil
					profiles[profile] = exists
				}
				if !exists {
					add(problem{Kind: probProfileGone, Harness: f.Harness, Path: f.Path, Entry: raw.Name,
						Message: fmt.Sprintf("%s: the hub's entry %q in %s serves the profile %s, which the hub no longer has: the agent's hub fails to start", f.Harness, raw.Name, f.Path, profile),
						Fix:     fmt.Sprintf("`capabilities hub profiles add %s` makes it again, or `capabilities hub disconnect --client %s` takes the hub's entries out of %s", profile, f.Harness, f.Path)})
				}
				continue
			}
			if s.Disabled || s.Kind != harness.KindStdio {
				continue // the agent does not start it; an HTTP entry is not started here
			}
			if why := harness.MissingCommand(cs.env, s); why != "" {
				add(problem{Kind: probCommand, Harness: f.Harness, Path: f.Path, Entry: raw.Name,
					Message: fmt.Sprintf("%s: the entry %q in %s runs %s: %s", f.Harness, raw.Name, f.Path, s.Command, why),
					Fix:     fmt.Sprintf("install %s (or put it on the PATH), or correct or remove the %q entry of %s", s.Command, raw.Name, f.Path)})
			}
		}
	}
	return r, nil
}

func slicesHasNamespace(bad []hub.UnreadableSource, ns string) bool {
	for _, b := range bad {
		if b.Namespace == ns {
			return true
		}
	}
	return false
}

// position is "line L, column C" of a syntax error.
func position(se *harness.SyntaxError) string {
	switch {
	case se.Line > 0 && se.Col > 0:
		return fmt.Sprintf("line %d, column %d", se.Line, se.Col)
	case se.Line > 0:
		return fmt.Sprintf("line %d", se.Line)
	}
	return "the place the message says"
}

// secretName is the NAME a source's credential is known by here: the
// variable a stdio source reads it from ("" when it has none).
func secretName(src *model.Source) string { return src.SecretEnv }

// envOf is the variable a stdio source reads its credential from.
func envOf(src *model.Source) string {
	if src.Kind == model.KindStdio {
		return src.SecretEnv
	}
	return ""
}

// headerOf is the header a remote source reads its credential from ("" for
// Authorization: Bearer).
func headerOf(src *model.Source) string {
	if src.Kind == model.KindHTTP {
		return src.SecretHeader
	}
	return ""
}

// authCommand is the exact `hub auth` that stores (or signs in for) the
// connection conn of src.
func authCommand(src *model.Source, conn, envVar, header string, oauth bool) string {
	cmd := "capabilities hub auth " + src.Namespace
	if conn != "" && (conn != hub.DefaultConnection || !oauth) {
		cmd += " --connection " + conn
	}
	if oauth {
		return cmd
	}
	switch {
	case src.Kind == model.KindStdio && envVar != "":
		cmd += " --env " + envVar
	case src.Kind == model.KindHTTP && header != "":
		cmd += " --header " + header
	}
	return cmd
}

// missingSecret is the problem of a connection with no secret: which NAME,
// and how to store it (hub auth reads it at a masked prompt, or from
// standard input; stack pull reads it from the environment or
// ~/.capabilities/.env).
func missingSecret(src *model.Source, conn, name, envVar, header string, oauth bool, what string) problem {
	p := problem{Kind: probMissingSecret, Namespace: src.Namespace, Connection: conn, Secret: name, Message: what}
	cmd := authCommand(src, conn, envVar, header, oauth)
	if oauth {
		p.Fix = "sign in: `" + cmd + "`"
		return p
	}
	p.Fix = "`" + cmd + "` stores it (asked at a masked prompt, or read from standard input)"
	if name != "" {
		set := ""
		if os.Getenv(name) != "" {
			set = "environment"
		} else if vals, err := readDotEnv(); err == nil && vals[name] != "" {
			set = "~/.capabilities/.env"
		}
		if set != "" {
			p.Fix = fmt.Sprintf("%s is set in the %s: `printf %%s \"$%s\" | %s` stores it", name, set, name, cmd)
			if set != "environment" {
				p.Fix = fmt.Sprintf("%s is set in ~/.capabilities/.env: `capabilities stack pull` stores it, or `%s` (asked at a masked prompt)", name, cmd)
			}
		} else {
			p.Fix += fmt.Sprintf("; or set %s in the environment or in ~/.capabilities/.env (%s=…) and `capabilities stack pull` stores it", name, name)
		}
	}
	return p
}

func orName(s string) string {
	if s == "" {
		return "its secret"
	}
	return s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func stackDirOrEmpty() string {
	d, _ := stackDir()
	return d
}

// quoteArg quotes a path for a shell command when it needs it.
func quoteArg(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"$\\`") {
		return s
	}
	return model.QuoteCommand([]string{s})
}

func sortedErrKeys(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// printDoctor prints doctor's text: what it checked, each problem with
// its fix, and the count.
func (e *env) printDoctor(r *doctorReport) {
	w := e.stdout
	fmt.Fprintf(w, "checked: the hub at %s (secrets %s), %s, %s, %s, %s\n", r.Checked.Hub, r.Checked.Secrets,
		plural(r.Checked.Sources, "source"), plural(r.Checked.Skills, "skill"), plural(len(r.Checked.Configs), "agent config"), plural(r.Checked.Stack, "stack source"))
	if r.Checked.Store != nil {
		fmt.Fprintf(w, "store: %s\n", r.Checked.Store)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem (%s): %s\n  fix: %s\n", p.Kind, p.Message, p.Fix)
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "no problems")
		return
	}
	fmt.Fprintf(w, "%s\n", plural(len(r.Problems), "problem"))
}
