package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/spf13/cobra"
)

func newReviewCmd(e *env) *cobra.Command {
	var (
		accept bool
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "review [namespace]",
		Short: "Review new and changed tools and the commands sources run",
		Long: `Show every new or changed tool in three groups — read-only (proposed allow), writes
(ask) and destructive (ask, flagged) — with what changed for changed tools, and every
stdio command not yet consented to. Enter accepts the proposal; e adjusts per tool.
--accept accepts the proposal without prompting.`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("review expects at most one namespace (got %d)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			ns := ""
			if len(args) == 1 {
				ns = args[0]
			}
			h, _, err := e.openHub()
			if err != nil {
				return err
			}
			defer h.Close()
			if ns != "" {
				if _, err := h.Source(c.Context(), ns); err != nil {
					return err
				}
			}
			return runReview(c.Context(), e, h, ns, accept, asJSON)
		},
	}
	c.Flags().BoolVar(&accept, "accept", false, "accept the proposal without prompting (for scripts)")
	c.Flags().BoolVar(&asJSON, "json", false, "print what awaits review as JSON (with --accept: after accepting)")
	return c
}

// runReview shows the pending review and records the person's decisions.
func runReview(ctx context.Context, e *env, h *hub.Hub, ns string, accept, asJSON bool) error {
	return reviewWith(ctx, e, h, ns, accept, asJSON, printReview)
}

// reviewWith is runReview showing the review with show.
func reviewWith(ctx context.Context, e *env, h *hub.Hub, ns string, accept, asJSON bool, show func(*env, *hub.Review)) error {
	r, err := h.PendingReview(ctx, ns)
	if err != nil {
		return err
	}
	if asJSON && !accept {
		return e.printJSON(shownReview(r))
	}
	if len(r.Items) == 0 && len(r.Commands) == 0 {
		if asJSON {
			return e.printJSON(map[string]any{"accepted": 0})
		}
		fmt.Fprintln(e.stdout, "Nothing to review.")
		return nil
	}
	if !asJSON {
		show(e, r)
	}
	decisions := map[string]policy.Action{}
	if !accept {
		fmt.Fprint(e.stdout, "\n[Enter] accept the proposal   [e] adjust per tool   [q] quit without changes: ")
		line, err := e.readLine()
		if err != nil && line == "" {
			fmt.Fprintln(e.stdout)
			return fmt.Errorf("no answer on standard input; nothing recorded (pass --accept to accept the proposal without prompting)")
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "", "y", "yes", "a":
		case "e":
			d, err := decideEach(e, r)
			if err != nil {
				return err
			}
			decisions = d
		default:
			fmt.Fprintln(e.stdout, "Nothing recorded.")
			return nil
		}
	}
	if err := h.AcceptReview(ctx, r, decisions, "review"); err != nil {
		return err
	}
	if asJSON {
		return e.printJSON(map[string]any{"accepted": len(r.Items), "commands": len(r.Commands), "review": shownReview(r)})
	}
	fmt.Fprintf(e.stdout, "Reviewed %d tool(s)", len(r.Items))
	if len(r.Commands) > 0 {
		fmt.Fprintf(e.stdout, " and %d command(s)", len(r.Commands))
	}
	fmt.Fprintln(e.stdout, ".")
	return nil
}

// decideEach asks allow, ask or deny for each tool of r (Enter keeps the
// proposal).
func decideEach(e *env, r *hub.Review) (map[string]policy.Action, error) {
	decisions := map[string]policy.Action{}
	for _, it := range r.Items {
		for {
			fmt.Fprintf(e.stdout, "  %s [allow/ask/deny] (%s): ", it.Tool.Address, it.Proposal)
			ans, err := e.readLine()
			ans = strings.TrimSpace(ans)
			if ans == "" {
				if err != nil {
					return nil, fmt.Errorf("no answer for %s; nothing recorded", it.Tool.Address)
				}
				break
			}
			a, perr := policy.ParseAction(ans)
			if perr != nil {
				fmt.Fprintf(e.stdout, "    %v\n", perr)
				continue
			}
			decisions[it.Tool.Address] = a
			break
		}
	}
	return decisions, nil
}

func printReview(e *env, r *hub.Review) {
	printReviewHead(e, r)
	printReviewGroups(e, r, "")
}

// printReviewGroups shows every tool of r in its group, each line indented
// by indent more.
func printReviewGroups(e *env, r *hub.Review, indent string) {
	for _, g := range reviewGroups {
		var lines []string
		for _, it := range r.Items {
			if it.Effect != g.effect {
				continue
			}
			flag := ""
			if g.effect == model.EffectDestructive {
				flag = "  ! destructive"
			}
			lines = append(lines, fmt.Sprintf("  %-44s %-8s %s%s", it.Tool.Address, it.Status, firstSentence(it.Tool.Description), flag))
			if r := it.SourceRule; r != nil {
				lines = append(lines, sourceRuleLine(r))
			}
			for _, ch := range it.Changes {
				lines = append(lines, "      "+strings.ReplaceAll(ch, "\n", "\n      "))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(e.stdout, "\n%s%s\n%s%s\n", indent, g.title, indent, strings.Join(lines, "\n"+indent))
		}
	}
}

// reviewGroups are the review's groups of tools, by effect.
var reviewGroups = []struct {
	effect model.Effect
	title  string
}{
	{model.EffectRead, "Read-only (proposed: allow)"},
	{model.EffectWrite, "Writes (proposed: ask)"},
	{model.EffectDestructive, "Destructive or unannotated (proposed: ask)"},
}

// printReviewHead shows how many tools the review holds, and the commands
// it consents to.
func printReviewHead(e *env, r *hub.Review) {
	news, changed := 0, 0
	for _, it := range r.Items {
		if it.Status == "new" {
			news++
		} else {
			changed++
		}
	}
	fmt.Fprintf(e.stdout, "Review: %d new and %d changed tool(s)\n", news, changed)
	if len(r.Commands) > 0 {
		fmt.Fprintln(e.stdout, "\nCommands these sources run on this machine (accepting consents to them):")
		for _, c := range r.Commands {
			fmt.Fprintf(e.stdout, "  %s: %s\n", c.Namespace, visible.Line(c.Shown))
		}
	}
}

// printReviewCounts shows a review of tools just listed (hub add): how
// many of each group, and only the tools a rule on their whole source will
// decide otherwise than proposed.
func printReviewCounts(e *env, r *hub.Review) {
	printReviewHead(e, r)
	fmt.Fprintln(e.stdout)
	for _, g := range reviewGroups {
		n := 0
		var ruled []string
		for _, it := range r.Items {
			if it.Effect != g.effect {
				continue
			}
			n++
			if it.SourceRule != nil {
				ruled = append(ruled, "  "+it.Tool.Address, sourceRuleLine(it.SourceRule))
			}
		}
		if n > 0 {
			fmt.Fprintf(e.stdout, "%s: %d\n", g.title, n)
		}
		if len(ruled) > 0 {
			fmt.Fprintln(e.stdout, strings.Join(ruled, "\n"))
		}
	}
}

// sourceRuleLine says how a rule on a tool's whole source decides it.
func sourceRuleLine(r *policy.Rule) string {
	what := map[policy.Action]string{policy.Allow: "runs without asking", policy.Deny: "is denied", policy.Ask: "asks"}[r.Action]
	return fmt.Sprintf("      once reviewed, it %s: the rule for the whole source %s says %s", what, r.Target, r.Action)
}

// firstSentence is the description's first sentence, at most 70 chars,
// on one line.
func firstSentence(s string) string {
	s = typegen.FirstSentence(s)
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return visible.Line(s)
}

// shownReview is r as printed: each command with the credentials of its
// arguments masked (CommandConsent.Shown).
func shownReview(r *hub.Review) *hub.Review {
	shown := *r
	shown.Commands = make([]hub.CommandConsent, len(r.Commands))
	for i, c := range r.Commands {
		c.Command = c.Shown
		shown.Commands[i] = c
	}
	return &shown
}
