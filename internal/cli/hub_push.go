package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/push"
	"github.com/capabilities-sh/capabilities/engine/stack"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newHubPushCmd(e *env) *cobra.Command {
	var withSecrets, yes, dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "push [url]",
		Short: "Send this hub's sources, policy, profiles and skills to the hosted hub you signed in to",
		Long: `Send this hub's capabilities to a hosted hub (` + "`capabilities hub login <url>`" + ` first;
the URL is needed only when signed in to several): its remote sources (streamable
HTTP MCP servers and OpenAPI documents at an URL), policy rules, profiles, skills
and its connections' metadata: the names of their secrets, never a value. A
source that runs a local command (stdio) stays here, with the rules and profiles
that name it: a hosted hub runs remote sources only.

The hosted hub answers with a plan (what it would add, change and remove) and its
hash; applying needs that hash, so nothing is applied if the hosted hub changed
meanwhile. A second push with nothing changed is a no-op. The hosted hub lists the
tools of a source it adds itself, and they go through review there.

--secrets also sends the secrets the connections need, each after you say yes to
it by name (never with --no-input), over TLS only; the hosted hub stores them
encrypted. Without it, a connection whose secret the hosted hub lacks is named.`,
		Example: `  capabilities hub push
  capabilities hub push --secrets
  capabilities hub push --dry-run https://hub.example.com`,
		Args: cobra.MaximumNArgs(1),
		RunE: e.withHub(func(c *cobra.Command, args []string, h *hub.Hub, _ hubStore) error {
			return runHubPush(c.Context(), e, h, args, withSecrets, yes, dryRun, asJSON)
		}),
	}
	c.Flags().BoolVar(&withSecrets, "secrets", false, "also send the connections' secrets, each after a yes (over TLS only)")
	c.Flags().BoolVarP(&yes, "yes", "y", false, "apply the plan without asking")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "show the plan, apply nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan and the result as JSON")
	return c
}

func runHubPush(ctx context.Context, e *env, h *hub.Hub, args []string, withSecrets, yes, dryRun, asJSON bool) error {
	pc, l, err := e.hostedClient(ctx, args)
	if err != nil {
		return err
	}
	b, left, err := push.Export(ctx, h)
	if err != nil {
		return err
	}
	for _, x := range left {
		fmt.Fprintf(e.stderr, "Left here: %s: %s.\n", x.Key, x.Reason)
	}
	if withSecrets {
		if err := push.SecureURL(l.URL); err != nil {
			return fmt.Errorf("pushing secrets: %w", err)
		}
		secs, err := push.Secrets(ctx, h, b)
		if err != nil {
			return err
		}
		if len(secs) > 0 && e.noInput {
			return fmt.Errorf("pushing secrets: each secret is sent after a yes, and --no-input asks nothing: nothing was sent; run without --no-input, or push without --secrets")
		}
		for _, s := range secs {
			ok, err := askYesNo(e, fmt.Sprintf("Send the secret %s to %s? [y/N]: ", s, l.URL), false)
			if err != nil {
				return fmt.Errorf("pushing secrets: %w", err)
			}
			if ok {
				b.Secrets = append(b.Secrets, s)
			}
		}
	}
	plan, err := pc.Plan(ctx, b)
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", l.URL, err)
	}
	if asJSON && (dryRun || len(plan.Changes) == 0) {
		return e.printJSON(map[string]any{"url": l.URL, "plan": plan})
	}
	if len(plan.Changes) == 0 {
		printNotes(e, plan.Notes)
		fmt.Fprintf(e.stdout, "Nothing to push: %s has what this hub holds.\n", l.URL)
		return nil
	}
	if !asJSON {
		fmt.Fprintf(e.stdout, "Push to %s: %s\n", l.URL, plural(len(plan.Changes), "change"))
		printPushChanges(e, plan.Changes)
		printNotes(e, plan.Notes)
	}
	if dryRun {
		return nil
	}
	if !yes {
		if e.noInput {
			return fmt.Errorf("pushing to %s: %s to apply and --no-input asks nothing: nothing was applied; pass --yes to apply the plan", l.URL, plural(len(plan.Changes), "change"))
		}
		ok, err := askYesNo(e, fmt.Sprintf("Apply %s to %s? [y/N]: ", plural(len(plan.Changes), "change"), l.URL), false)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(e.stdout, "Nothing applied.")
			return nil
		}
	}
	res, err := pc.Apply(ctx, b, plan.Hash)
	if errors.Is(err, push.ErrStale) {
		return fmt.Errorf("pushing to %s: %w; nothing was applied: run `capabilities hub push` again to see the new plan", l.URL, push.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", l.URL, err)
	}
	if asJSON {
		if err := e.printJSON(map[string]any{"url": l.URL, "plan": plan, "result": res}); err != nil {
			return err
		}
	} else {
		for _, f := range res.Failed {
			fmt.Fprintf(e.stdout, "! %s not applied: %s\n", f.Key(), visible.Line(f.Error))
		}
		fmt.Fprintf(e.stdout, "Pushed %s of %s to %s.\n", plural(len(res.Applied), "change"), plural(len(plan.Changes), "change"), l.URL)
		for _, c := range res.Applied {
			if c.Kind == stack.KindSource && c.Op == stack.OpAdd {
				fmt.Fprintf(e.stdout, "Review the new tools on the hosted hub (its dashboard) before its agents call them without asking.\n")
				break
			}
		}
	}
	if len(res.Failed) > 0 {
		return errSilent{fmt.Errorf("%s not applied", plural(len(res.Failed), "change"))}
	}
	return nil
}

func printPushChanges(e *env, cs []push.Change) {
	for _, c := range cs {
		mark := "~"
		switch c.Op {
		case stack.OpAdd:
			mark = "+"
		case stack.OpRemove:
			mark = "-"
		}
		line := "  " + mark + " " + c.Key()
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(e.stdout, visible.Line(line))
	}
}

func printNotes(e *env, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(e.stdout, "  note: "+visible.Line(strings.TrimSpace(n)))
	}
}
