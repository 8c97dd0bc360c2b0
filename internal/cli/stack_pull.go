package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newStackPullCmd(e *env) *cobra.Command {
	var yes bool
	c := &cobra.Command{
		Use:   "pull",
		Short: "Apply the stack repository's capabilities to this machine, after a review",
		Long: `Fetch the stack and show what it changed since this machine last synced with it:
new, changed and removed sources, skills, policy rules and profiles. Enter applies
the changes; e decides each. A rule that would loosen this machine's policy (a
deny or ask lifted, a new allow) is asked apart and never applied by --yes. A
change made here and in the stack, differently, is a conflict: you keep yours or
take theirs. A pulled source is started here and its tools listed by this hub,
then reviewed like any new tool. The secrets its connections need are then
read from the environment, the keychain or ~/.capabilities/.env, or asked.`,
		Args: exactArgs(0, "no arguments"),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, st hubStore) error {
			return runStackPull(c.Context(), e, h, st, yes)
		}),
	}
	c.Flags().BoolVarP(&yes, "yes", "y", false, "apply the changes that loosen nothing without asking (a loosening rule is left out; a conflict is still asked)")
	return c
}

func runStackPull(ctx context.Context, e *env, h *hub.Hub, st hubStore, yes bool) error {
	dir, err := stack.Dir()
	if err != nil {
		return err
	}
	r, err := stack.Open(dir)
	if err != nil {
		return err
	}
	theirs, err := r.Fetch(ctx)
	if err != nil {
		return err
	}
	if theirs == "" {
		fmt.Fprintln(e.stdout, "The stack repository is empty: nothing to pull (`capabilities stack push` fills it).")
		return nil
	}
	base, err := r.Base()
	if err != nil {
		return err
	}
	tf, err := r.Tree(ctx, theirs)
	if err != nil {
		return err
	}
	theirState, err := stack.Read(tf)
	if err != nil {
		return fmt.Errorf("pulling the stack: %w; nothing was applied", err)
	}
	baseState := stack.NewState()
	if base != "" {
		bf, err := r.Tree(ctx, base)
		if err != nil {
			return err
		}
		if baseState, err = stack.Read(bf); err != nil {
			return fmt.Errorf("pulling the stack: the commit this machine last synced with: %w; nothing was applied", err)
		}
	}
	mine, err := stack.FromHub(ctx, h)
	if err != nil {
		return err
	}
	plan := stack.Plan(baseState, mine, theirState)
	if len(plan) == 0 {
		kept, err := r.Synced(ctx, base, theirs)
		if err != nil {
			return err
		}
		noteKept(e, kept)
		fmt.Fprintf(e.stdout, "Up to date: this machine has what the stack holds (%s).\n", theirs[:12])
		return nil
	}
	printStackPlan(e, h, plan, theirs)

	var plain, loosening, conflicts []int
	for i, c := range plan {
		switch {
		case c.Conflict:
			conflicts = append(conflicts, i)
		case c.Loosens:
			loosening = append(loosening, i)
		default:
			plain = append(plain, i)
		}
	}
	if e.noInput {
		if len(conflicts) > 0 {
			return fmt.Errorf("pulling the stack: %s changed both here and in the stack (%s); nothing was applied: run `capabilities stack pull` without --no-input to keep yours or take theirs", plural(len(conflicts), "item"), keys(plan, conflicts))
		}
		if !yes {
			return fmt.Errorf("pulling the stack: %s to review; nothing was applied: pass --yes to apply those that loosen nothing, or run without --no-input", plural(len(plan), "change"))
		}
	}
	apply := map[int]bool{}
	undecided := false // a loosening rule --yes left for the person
	if len(plain) > 0 {
		if yes {
			for _, i := range plain {
				apply[i] = true
			}
		} else {
			fmt.Fprintf(e.stdout, "\n[Enter] apply the %s   [e] decide each   [q] quit without changes: ", plural(len(plain), "change"))
			line, rerr := e.readLine()
			if rerr != nil && line == "" {
				fmt.Fprintln(e.stdout)
				return errors.New("no answer on standard input; nothing was applied (pass --yes to apply the changes that loosen nothing without asking)")
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "", "y", "yes", "a":
				for _, i := range plain {
					apply[i] = true
				}
			case "e":
				for _, i := range plain {
					ok, err := askYesNo(e, fmt.Sprintf("  %s %s: apply? [Y/n]: ", opMark(plan[i]), plan[i].Key()), true)
					if err != nil {
						return err
					}
					apply[i] = ok
				}
			default:
				fmt.Fprintln(e.stdout, "Nothing applied.")
				return nil
			}
		}
	}
	for _, i := range loosening {
		c := plan[i]
		if yes {
			fmt.Fprintf(e.stdout, "Not applied: %s loosens this machine's policy; --yes never does that: run `capabilities stack pull` to decide it.\n", c.Key())
			undecided = true
			continue
		}
		ok, err := askYesNo(e, fmt.Sprintf("  %s: %s → %s LOOSENS this machine's policy. Apply it? [y/N]: ", c.Key(), ruleAction(c.Mine), ruleAction(c.Theirs)), false)
		if err != nil {
			return err
		}
		apply[i] = ok
	}
	for _, i := range conflicts {
		c := plan[i]
		for {
			fmt.Fprintf(e.stdout, "  conflict %s: [m] keep mine   [t] take theirs: ", c.Key())
			line, rerr := e.readLine()
			ans := strings.ToLower(strings.TrimSpace(line))
			if ans == "m" || ans == "mine" {
				break
			}
			if ans == "t" || ans == "theirs" {
				apply[i] = true
				break
			}
			if rerr != nil {
				fmt.Fprintln(e.stdout)
				return fmt.Errorf("no answer for the conflict on %s; nothing was applied", c.Key())
			}
		}
	}
	return applyStackPlan(ctx, e, h, st, r, plan, apply, base, theirs, yes, undecided)
}

func applyStackPlan(ctx context.Context, e *env, h *hub.Hub, st hubStore, r *stack.Repo, plan []stack.Change, apply map[int]bool, base, theirs string, yes, undecided bool) error {
	var failed []string
	applied := 0
	do := func(c stack.Change, f func() error) bool {
		if err := f(); err != nil {
			failed = append(failed, c.Key())
			fmt.Fprintf(e.stdout, "! %s not applied: %s\n", c.Key(), h.Scrub(err.Error()))
			return false
		}
		applied++
		return true
	}
	// Removals first, the kinds in reverse (a profile naming a source goes
	// before the source), then additions and changes in plan order.
	for i := len(plan) - 1; i >= 0; i-- {
		c := plan[i]
		if !apply[i] || c.Op != stack.OpRemove {
			continue
		}
		do(c, func() error { return applyOne(ctx, e, h, st, c, yes) })
	}
	var needs []secretNeed
	for i, c := range plan {
		if !apply[i] || c.Op == stack.OpRemove {
			continue
		}
		if do(c, func() error { return applyOne(ctx, e, h, st, c, yes) }) && c.Kind == stack.KindSource {
			needs = append(needs, sourceNeeds(c.Theirs.(stack.SourceFile))...)
		}
	}
	var missing error
	if len(needs) > 0 {
		fmt.Fprintln(e.stdout, "\nSecrets the pulled sources need:")
		from, err := e.provideSecrets(ctx, h, needs)
		for _, n := range needs {
			if w, ok := from[n]; ok && w != "keychain" {
				fmt.Fprintf(e.stdout, "  %s: %s\n", n, w)
			}
		}
		if err != nil {
			if e.noInput {
				missing = err
			} else {
				fmt.Fprintf(e.stdout, "! %s\n  `capabilities doctor` lists what is missing; `capabilities hub auth <namespace>` stores it.\n", h.Scrub(err.Error()))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("pulling the stack: %s not applied (%s); the rest was, and the stack's last sync is unchanged: fix what is said above and run `capabilities stack pull` again", plural(len(failed), "change"), strings.Join(failed, ", "))
	}
	if undecided {
		// The sync stays where it was: the next pull asks what --yes
		// left, and a push waits for it.
		fmt.Fprintf(e.stdout, "Applied %s of %s; what loosens the policy waits for you: run `capabilities stack pull`.\n", plural(applied, "change"), plural(len(plan), "change"))
		return missing
	}
	// What the person declined stays in the stack: the next push from
	// here keeps the stack's item (stack.KeepDeclined).
	var no []stack.Change
	var noIdx []int
	for i, c := range plan {
		if !apply[i] && !c.Conflict {
			no, noIdx = append(no, c), append(noIdx, i)
		}
	}
	if len(no) > 0 {
		declined, err := r.Declined()
		if err != nil {
			return err
		}
		stack.Decline(declined, no)
		if err := r.SetDeclined(declined); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Declined here, left in the stack for the other machines: %s.\n", keys(plan, noIdx))
	}
	kept, err := r.Synced(ctx, base, theirs)
	if err != nil {
		return err
	}
	noteKept(e, kept)
	fmt.Fprintf(e.stdout, "Applied %s of %s; this machine is synced with the stack at %s.\n", plural(applied, "change"), plural(len(plan), "change"), theirs[:12])
	return missing
}

// applyOne applies one change through the hub.
func applyOne(ctx context.Context, e *env, h *hub.Hub, st hubStore, c stack.Change, yes bool) error {
	switch c.Kind {
	case stack.KindRule:
		return stack.ApplyRule(ctx, h, c)
	case stack.KindProfile:
		return stack.ApplyProfile(ctx, h, c)
	case stack.KindSkill:
		return stack.ApplySkill(ctx, h, c)
	}
	// A source.
	if c.Theirs == nil {
		return h.Remove(ctx, c.Name)
	}
	sf := c.Theirs.(stack.SourceFile)
	if c.Mine == nil {
		// The hub starts it and lists its tools itself: what the stack's
		// machine listed is never trusted.
		fmt.Fprintf(e.stdout, "\nStarting %s to list its tools...\n", c.Name)
		req := stack.Request(sf)
		// A server may need its credential to start or to list its tools:
		// the default connection's is looked up (or asked) first, reaches
		// the server while it is proposed, and is stored once accepted.
		var first *secretNeed
		for _, n := range sourceNeeds(sf) {
			if n.Connection == hub.DefaultConnection {
				first = &n
				break
			}
		}
		where := ""
		if first != nil {
			var dotEnv map[string]string
			v, w, err := e.findSecret(*first, &dotEnv)
			if err != nil {
				return err
			}
			req.Secret, where = v, w
		}
		p, err := h.Propose(ctx, req)
		if err != nil {
			return err
		}
		if p.SignIn {
			fmt.Fprintf(e.stdout, "%s asks for a sign-in before it lists its tools: `capabilities hub auth %s` signs in.\n", c.Name, c.Name)
		}
		if err := h.Accept(ctx, p); err != nil {
			return err
		}
		if first != nil && req.Secret != "" {
			if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: first.Namespace, Connection: first.Connection, Value: req.Secret, Env: first.Env, Header: first.Header}); err != nil {
				return fmt.Errorf("storing %s: %w", first, err)
			}
			fmt.Fprintf(e.stdout, "  %s: %s\n", first, where)
		}
	} else {
		if stack.SameSource(c.Mine.(stack.SourceFile), sf) {
			return nil // only its connections changed: their secrets are asked next
		}
		if err := stack.UpdateSource(ctx, st, h, sf); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nListing the tools of %s again...\n", c.Name)
		ch, err := h.Refresh(ctx, c.Name)
		if err != nil {
			return err
		}
		if len(ch) == 1 && ch[0].Error != "" {
			fmt.Fprintf(e.stdout, "! %s could not list its tools: %s (`capabilities hub refresh %s` tries again)\n", c.Name, h.Scrub(ch[0].Error), c.Name)
		}
	}
	// Its tools go through review as any new tool (--yes accepts the
	// review's proposal, as hub review --accept does).
	return reviewWith(ctx, e, h, c.Name, yes, false, printReview)
}

// sourceNeeds are the secrets a pulled source's connections need.
func sourceNeeds(sf stack.SourceFile) []secretNeed {
	var out []secretNeed
	for _, c := range sf.Connections {
		if c.Secret == "" {
			continue
		}
		n := secretNeed{Namespace: sf.Source.Namespace, Connection: c.Name, Name: c.Secret}
		if c.Env != sf.Source.SecretEnv {
			n.Env = c.Env
		}
		if c.Header != sf.Source.SecretHeader && !(sf.Source.SecretHeader == "" && strings.EqualFold(c.Header, "Authorization")) {
			n.Header = c.Header
		}
		out = append(out, n)
	}
	return out
}

func askYesNo(e *env, prompt string, def bool) (bool, error) {
	fmt.Fprint(e.stdout, prompt)
	line, err := e.readLine()
	ans := strings.ToLower(strings.TrimSpace(line))
	if ans == "" && err != nil {
		fmt.Fprintln(e.stdout)
		return false, errors.New("no answer on standard input; nothing was applied")
	}
	switch ans {
	case "":
		return def, nil
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

func noteKept(e *env, kept []string) {
	for _, p := range kept {
		fmt.Fprintf(e.stdout, "Kept this machine's %s in the stack directory (changed here and in the stack): push it or edit it.\n", p)
	}
}

func keys(plan []stack.Change, idx []int) string {
	ks := make([]string, len(idx))
	for j, i := range idx {
		ks[j] = plan[i].Key()
	}
	return strings.Join(ks, ", ")
}

func opMark(c stack.Change) string {
	switch c.Op {
	case stack.OpAdd:
		return "+"
	case stack.OpRemove:
		return "-"
	}
	return "~"
}

func ruleAction(v any) string {
	if r, ok := v.(stack.Rule); ok {
		return string(r.Action)
	}
	return "(no rule)"
}

// printStackPlan shows the plan: each change, what it is on each side.
func printStackPlan(e *env, h *hub.Hub, plan []stack.Change, theirs string) {
	fmt.Fprintf(e.stdout, "Stack pull: %s from the stack (%s)\n", plural(len(plan), "change"), theirs[:12])
	for _, c := range plan {
		if c.Conflict {
			fmt.Fprintf(e.stdout, "\n  ! conflict: %s changed here and in the stack\n", c.Key())
			fmt.Fprintf(e.stdout, "      mine:   %s\n", describeStackItem(h, c.Mine))
			fmt.Fprintf(e.stdout, "      theirs: %s\n", describeStackItem(h, c.Theirs))
			if c.Loosens {
				fmt.Fprintln(e.stdout, "      ! taking theirs loosens this machine's policy")
			}
			continue
		}
		fmt.Fprintf(e.stdout, "\n  %s %s\n", opMark(c), c.Key())
		switch c.Op {
		case stack.OpAdd:
			fmt.Fprintf(e.stdout, "      %s\n", describeStackItem(h, c.Theirs))
		case stack.OpRemove:
			fmt.Fprintf(e.stdout, "      removed in the stack (here: %s)\n", describeStackItem(h, c.Mine))
		default:
			for _, d := range differences(h, c.Mine, c.Theirs) {
				fmt.Fprintf(e.stdout, "      %s\n", d)
			}
		}
		if c.Loosens {
			fmt.Fprintf(e.stdout, "      ! loosens this machine's policy (%s → %s): asked apart, never applied by --yes\n", ruleAction(c.Mine), ruleAction(c.Theirs))
		}
		if c.Kind == stack.KindSource && c.Theirs != nil {
			fmt.Fprintln(e.stdout, "      its tools are listed here and go through review")
		}
	}
}

// describeStackItem is one line about a stack item (nil: absent).
func describeStackItem(h *hub.Hub, v any) string {
	switch x := v.(type) {
	case nil:
		return "(absent)"
	case stack.SourceFile:
		s := x.Source.Model()
		what := s.URL
		switch s.Kind {
		case model.KindStdio:
			what = "runs " + s.ShownCommandLine()
		case model.KindOpenAPI:
			what = "OpenAPI " + s.Document
		}
		out := what
		if len(s.Env) > 0 {
			out += "; env " + strings.Join(slices.Sorted(maps.Keys(s.Env)), ", ")
		}
		var secrets []string
		for _, c := range x.Connections {
			if c.Secret != "" {
				secrets = append(secrets, c.Secret+" ("+c.Name+")")
			} else if c.Auth != "" {
				secrets = append(secrets, "sign-in ("+c.Name+")")
			}
		}
		if len(secrets) > 0 {
			out += "; needs " + strings.Join(secrets, ", ")
		}
		return visible.Line(h.Scrub(out))
	case stack.Rule:
		return string(x.Action)
	case hub.Profile:
		what := "every tool"
		if !x.All() {
			what = strings.Join(append(slices.Clone(x.Namespaces), x.Tools...), ", ")
		}
		out := x.Mode + " mode, " + what
		if len(x.Skills) > 0 {
			out += "; skills " + strings.Join(x.Skills, ", ")
		}
		return visible.Line(out)
	case stack.Skill:
		if x.Git != nil {
			return visible.Line(fmt.Sprintf("git %s@%s//%s", x.Git.Repo, x.Git.Commit[:12], x.Git.Path))
		}
		return plural(len(x.Files), "file")
	}
	return fmt.Sprint(v)
}

// differences says what changed between two versions of an item.
func differences(h *hub.Hub, mine, theirs any) []string {
	ms, ok1 := mine.(stack.SourceFile)
	ts, ok2 := theirs.(stack.SourceFile)
	if !ok1 || !ok2 {
		return []string{"here:  " + describeStackItem(h, mine), "stack: " + describeStackItem(h, theirs)}
	}
	a, b := ms.Source.Model(), ts.Source.Model()
	var out []string
	line := func(what, x, y string) {
		if x != y {
			out = append(out, fmt.Sprintf("%s: %s → %s", what, visible.Line(h.Scrub(x)), visible.Line(h.Scrub(y))))
		}
	}
	line("command", a.ShownCommandLine(), b.ShownCommandLine())
	line("url", a.URL, b.URL)
	line("cwd", a.Cwd, b.Cwd)
	line("document", a.Document, b.Document)
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(a.Env, b.Env))) {
		line("env "+k, shownEnv(a, k), shownEnv(b, k))
	}
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(a.Headers, b.Headers))) {
		line("header "+k, a.Headers[k], b.Headers[k])
	}
	line("secret env", a.SecretEnv, b.SecretEnv)
	line("secret header", a.SecretHeader, b.SecretHeader)
	line("connections", describeStackItem(h, stack.SourceFile{Connections: ms.Connections}), describeStackItem(h, stack.SourceFile{Connections: ts.Connections}))
	if len(out) == 0 {
		out = append(out, "changed")
	}
	return out
}

func shownEnv(s model.Source, k string) string {
	v, ok := s.Env[k]
	if !ok {
		return "(unset)"
	}
	if model.CredentialName(k) && !model.IsReference(v) {
		return "[masked]"
	}
	return v
}

func mergeKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
