package cli

// Dynamic shell completion (cobra's hidden __complete command, used by the
// scripts `capabilities completion bash|zsh|fish|powershell` prints). It
// answers from the store alone — sources, cached manifests, connections,
// policy and run records — so it is fast and never starts an upstream or the
// sandbox.

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/spf13/cobra"
)

// candidates lists what may be typed for one argument or flag; args are the
// positional arguments already on the command line.
type candidates func(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion

// complete turns candidates into a cobra completion function: it opens the
// store read-only, keeps the candidates that start with what was typed, and
// never falls back to file names.
func complete(list candidates) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if list == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ce := &env{}
		if f := c.Flag("store"); f != nil {
			ce.store = f.Value.String()
		}
		st, err := ce.openStore(c.Context())
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		h := hub.New(st, hub.Options{NoKeychain: true})
		defer h.Close()
		ctx := c.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		var out []cobra.Completion
		for _, cand := range list(ctx, h, args) {
			value, _, _ := strings.Cut(cand, "\t")
			if strings.HasPrefix(value, toComplete) {
				out = append(out, cand)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// byPosition completes the i-th positional argument with lists[i]; past the
// last list nothing is offered.
func byPosition(lists ...candidates) candidates {
	return func(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion {
		if len(args) >= len(lists) || lists[len(args)] == nil {
			return nil
		}
		return lists[len(args)](ctx, h, args)
	}
}

// fixed offers a fixed set of words.
func fixed(words ...cobra.Completion) candidates {
	return func(context.Context, *hub.Hub, []string) []cobra.Completion { return words }
}

// withoutGiven drops the candidates already on the command line.
func withoutGiven(list candidates) candidates {
	return func(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion {
		given := make(map[string]bool, len(args))
		for _, a := range args {
			given[a] = true
		}
		var out []cobra.Completion
		for _, c := range list(ctx, h, args) {
			if value, _, _ := strings.Cut(c, "\t"); !given[value] {
				out = append(out, c)
			}
		}
		return out
	}
}

// namespaces offers every source's namespace.
func namespaces(ctx context.Context, h *hub.Hub, _ []string) []cobra.Completion {
	recs, err := h.Sources(ctx)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	out := make([]cobra.Completion, 0, len(recs))
	for _, r := range recs {
		desc := string(r.Source.Kind) + " source"
		if r.Manifest != nil {
			desc = plural(len(r.Manifest.Tools), "tool") + ", " + desc
		}
		out = append(out, cobra.CompletionWithDesc(r.Source.Namespace, desc))
	}
	return out
}

// addresses offers every cached tool's address.
func addresses(ctx context.Context, h *hub.Hub, _ []string) []cobra.Completion {
	tools, err := h.Tools(ctx)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	out := make([]cobra.Completion, 0, len(tools))
	for _, t := range tools {
		out = append(out, cobra.CompletionWithDesc(t.Address, oneLine(t.Description)))
	}
	return out
}

// targets offers namespaces and tool addresses (describe, policy set).
func targets(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion {
	return append(namespaces(ctx, h, args), addresses(ctx, h, args)...)
}

// ruleTargets offers the targets that have a rule (policy remove).
func ruleTargets(ctx context.Context, h *hub.Hub, _ []string) []cobra.Completion {
	p, err := h.Policy(ctx)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	seen := map[string]bool{}
	var out []cobra.Completion
	for _, r := range p.Rules {
		if !seen[r.Target] {
			seen[r.Target] = true
			out = append(out, cobra.CompletionWithDesc(r.Target, string(r.Action)))
		}
	}
	return out
}

// connectionsOf offers the connection names of the namespace that the first
// argument (a namespace or a tool address) names.
func connectionsOf(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion {
	if len(args) == 0 {
		return nil
	}
	ns := args[0]
	if n, _, ok := model.SplitAddress(ns); ok {
		ns = n
	}
	conns, err := h.Connections(ctx, ns)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	out := make([]cobra.Completion, 0, len(conns.Items))
	for _, it := range conns.Items {
		desc := "connection of " + ns
		if it.Name == conns.Default {
			desc = "default " + desc
		}
		out = append(out, cobra.CompletionWithDesc(it.Name, desc))
	}
	return out
}

// runIDs offers the ids of the runs that keep satisfies, newest first; a
// run recorded running whose process died has status interrupted here
// (run.Engine.Effective).
func runIDs(keep func(*model.Run) bool) candidates {
	return func(ctx context.Context, h *hub.Hub, _ []string) []cobra.Completion {
		st := h.Store()
		ids, err := st.List(ctx, store.Runs)
		if err != nil {
			cobra.CompDebugln(err.Error(), true)
			return nil
		}
		eng, _ := h.Runs()
		var runs []*model.Run
		for _, id := range ids {
			r, err := store.Get[model.Run](ctx, st, store.Runs, id)
			if err != nil {
				continue // pruned meanwhile, or corrupt: `runs` reports it
			}
			if eng != nil {
				r.Status = eng.Effective(ctx, r)
			}
			if keep(r) {
				runs = append(runs, r)
			}
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.After(runs[j].CreatedAt) })
		out := make([]cobra.Completion, 0, len(runs))
		for _, r := range runs {
			out = append(out, cobra.CompletionWithDesc(r.ID, string(r.Status)+", started "+ago(r.CreatedAt)))
		}
		return out
	}
}

func anyRun(*model.Run) bool { return true }

func unfinishedRun(r *model.Run) bool { return !r.Status.Done() }

func waitingRun(r *model.Run) bool { return r.Status.Paused() }

// awaitingDecision keeps a run with a call that waits for a person's decision.
func awaitingDecision(r *model.Run) bool {
	if !r.Status.Paused() {
		return false
	}
	for _, p := range r.Pending {
		if p.AwaitsDecision() {
			return true
		}
	}
	return false
}

// approvable keeps what `hub approve` goes on with: a run with a call that
// waits for a decision, or one interrupted (resumed first, it asks about
// a call that was in flight).
func approvable(r *model.Run) bool {
	return r.Status == model.RunInterrupted || awaitingDecision(r)
}

// pendingCalls offers the undecided calls of the run in the first argument.
func pendingCalls(ctx context.Context, h *hub.Hub, args []string) []cobra.Completion {
	if len(args) == 0 {
		return nil
	}
	r, err := store.Get[model.Run](ctx, h.Store(), store.Runs, args[0])
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil
	}
	var out []cobra.Completion
	for _, p := range r.Pending {
		if p.AwaitsDecision() {
			out = append(out, cobra.CompletionWithDesc(p.ID, p.Address))
		}
	}
	return out
}

// oneLine shortens a description to its first line, at most 70 characters.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.ReplaceAll(s, "\t", " ")
	if r := []rune(s); len(r) > 70 {
		s = string(r[:69]) + "…"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
