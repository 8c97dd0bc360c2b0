package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/skill"
	"github.com/capabilities-sh/capabilities/engine/visible"
)

// importing is one server import starts and, once the person accepts,
// adds: what the harnesses hold (from), what the hub would store (prop),
// and what its review would be.
type importing struct {
	from      harness.Proposal
	req       hub.AddRequest
	notes     []string
	prop      *hub.Proposal
	review    *hub.Review
	skip      bool
	decisions map[string]policy.Action
}

// importResult is what an import did, server by server.
type importResult struct {
	added           []string
	failed, skipped []map[string]string
}

// importOnOneScreen is import as a person meets it in a terminal: every
// server found is started to list its tools (a server only in the current
// directory's repository files after the person says yes to its command),
// then one screen shows all of it — each server's command, credential and
// every tool with what the review proposes, and the skills — and one key
// accepts it all; [e] adjusts each server, tool and skill, [q] changes
// nothing. Only then is anything stored.
func importOnOneScreen(ctx context.Context, e *env, h *hub.Hub, props []harness.Proposal, found []foundSkill, skills skill.Store) (importResult, error) {
	todo, res, err := startFound(ctx, e, h, props, false, false)
	if err != nil {
		return res, err
	}
	var newSkills []*foundSkill
	for i := range found {
		if found[i].Status == "import" {
			newSkills = append(newSkills, &found[i])
		}
	}
	if len(todo) == 0 && len(newSkills) == 0 {
		return res, nil
	}
	printImportReview(e, todo, newSkills)
	fmt.Fprint(e.stdout, "\n[Enter] accept all   [e] adjust each   [q] quit without changes: ")
	line, err := e.readLine()
	if err != nil && line == "" {
		fmt.Fprintln(e.stdout)
		return res, fmt.Errorf("no answer on standard input; nothing added (pass --yes to accept without asking)")
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes", "a":
	case "e":
		if err := adjustImport(e, todo, newSkills); err != nil {
			return res, err
		}
	default:
		fmt.Fprintln(e.stdout, "Nothing added.")
		return res, nil
	}
	if err := addAll(ctx, e, h, todo, &res, false, nil); err != nil {
		return res, err
	}
	return res, importSkills(e, found, skills, false)
}

// startFound starts, all at once, the servers of props that are not
// sources yet and not disabled, each listing its tools; it reports those
// that could not be. A server found only in the current directory's
// repository files is started once the person says yes to its command
// (asked first, one by one), never with yes (--yes accepts what the
// person's agents run, not a repository's commands).
func startFound(ctx context.Context, e *env, h *hub.Hub, props []harness.Proposal, yes, quiet bool) ([]*importing, importResult, error) {
	var res importResult
	failed := func(ns string, err error) {
		msg := h.Scrub(err.Error())
		res.failed = append(res.failed, map[string]string{"namespace": ns, "error": msg})
		if !quiet {
			fmt.Fprintf(e.stdout, "! %s not added: %s\n", ns, msg)
		}
	}
	var starts []*importing
	for _, p := range props {
		if p.Existing != "" || p.Server.Disabled {
			continue
		}
		req, notes, err := p.Request()
		if err != nil {
			failed(p.Namespace, err)
			continue
		}
		if p.FromRepo() {
			if yes {
				nr := fmt.Sprintf("it is only in %s, which this directory's repository wrote; --yes accepts what your agents run, not a repository's commands: run `capabilities hub import` without --yes to be asked, or `capabilities hub add`", repoFiles(p))
				res.skipped = append(res.skipped, map[string]string{"namespace": p.Namespace, "reason": nr})
				if !quiet {
					fmt.Fprintf(e.stdout, "%s: not started: %s\n", p.Namespace, nr)
				}
				continue
			}
			ok, err := confirmRepoStart(e, p, req)
			if err != nil {
				return nil, res, err
			}
			if !ok {
				continue
			}
		}
		starts = append(starts, &importing{from: p, req: req, notes: notes})
	}
	errs := startAll(ctx, e, h, starts, quiet)
	var todo []*importing
	for i, it := range starts {
		switch err := errs[i]; {
		case errors.Is(err, context.Canceled):
			return nil, res, err
		case err != nil:
			failed(it.from.Namespace, err)
		default:
			todo = append(todo, it)
		}
	}
	return todo, res, nil
}

// startAll starts the servers at once, at most startsAtOnce at a time, and
// lists their tools: each one's proposal and review, or its error.
func startAll(ctx context.Context, e *env, h *hub.Hub, its []*importing, quiet bool) []error {
	errs := make([]error, len(its))
	if len(its) == 0 {
		return errs
	}
	if !quiet {
		fmt.Fprintf(e.stdout, "Starting %d server(s) to list their tools…\n", len(its))
	}
	turns := make(chan struct{}, startsAtOnce)
	var wg sync.WaitGroup
	for i, it := range its {
		wg.Add(1)
		go func() {
			defer wg.Done()
			turns <- struct{}{}
			defer func() { <-turns }()
			prop, err := h.Propose(ctx, it.req)
			if err == nil {
				it.prop = prop
				it.review, err = h.ReviewOf(ctx, []*hub.Proposal{prop})
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	e.clearStatus()
	return errs
}

// startsAtOnce is how many servers import starts at once.
const startsAtOnce = 4

// confirmRepoStart asks before starting a server found only in the
// current directory's repository files: its command is the repository's,
// not the person's or their agents'.
func confirmRepoStart(e *env, p harness.Proposal, req hub.AddRequest) (bool, error) {
	verb, what := "Connect to", model.Redact("URL", req.URL)
	if len(req.Command) > 0 {
		verb, what = "Start", model.QuoteCommand(append(req.Command[:1:1], model.RedactArgs(req.Command[1:])...))
	}
	fmt.Fprintf(e.stdout, "\n%s is only in %s, which this directory's repository wrote, not you or your agents.\n  %s\n", p.Namespace, repoFiles(p), visible.Line(what))
	if f := p.Server.FilledFrom(); len(f) > 0 {
		// What the repository has the server read from the person's
		// environment: a credential there would reach its command.
		fmt.Fprintf(e.stdout, "  It fills in from your environment: %s\n", strings.Join(f, "; "))
	}
	ok, err := confirm(e, fmt.Sprintf("%s it to list its tools? [y/N] ", verb))
	if err == nil && !ok {
		fmt.Fprintln(e.stdout, "Not started.")
	}
	return ok, err
}

// printImportReview is the one screen: each server to add with its
// command, its credential and every tool in its review group, then the
// skills to import.
func printImportReview(e *env, todo []*importing, skills []*foundSkill) {
	tools := 0
	for _, it := range todo {
		tools += len(it.prop.Manifest.Tools)
	}
	fmt.Fprintf(e.stdout, "\nReview: %d server(s) to add with %d tool(s)", len(todo), tools)
	if len(skills) > 0 {
		fmt.Fprintf(e.stdout, ", %d skill(s) to import", len(skills))
	}
	fmt.Fprintln(e.stdout, "; nothing is added until you accept.")
	for _, it := range todo {
		p := it.prop
		r, w, d := p.Counts()
		fmt.Fprintf(e.stdout, "\n%s: %d tool(s): %d read-only (allow), %d write and %d destructive (ask)\n", p.Source.Namespace, len(p.Manifest.Tools), r, w, d)
		switch {
		case p.Source.Kind == model.KindStdio:
			fmt.Fprintf(e.stdout, "  runs:  %s\n", visible.Line(p.Source.ShownCommandLine()))
			if p.Source.Cwd != "" {
				fmt.Fprintf(e.stdout, "  in:    %s\n", visible.Line(p.Source.Cwd))
			}
		default:
			fmt.Fprintf(e.stdout, "  url:   %s\n", visible.Line(p.Source.URL))
		}
		if it.req.Secret != "" {
			fmt.Fprintf(e.stdout, "  credential: %s moves into the keychain as %s/%s\n", it.from.Secrets[0], p.Source.Namespace, hub.DefaultConnection)
		}
		for _, n := range append(p.Notes, it.notes...) {
			fmt.Fprintf(e.stdout, "  note:  %s\n", n)
		}
		printReviewGroups(e, it.review, "  ")
	}
	if len(skills) > 0 {
		fmt.Fprintln(e.stdout, "\nSkills to import into the hub (hub connect installs them in the other agents):")
		for _, f := range skills {
			fmt.Fprintf(e.stdout, "  %s (%s %s)\n", f.Name, f.Harness, f.Path)
		}
	}
}

// adjustImport asks about each server (add it as proposed, skip it, or
// decide each tool), then each skill.
func adjustImport(e *env, todo []*importing, skills []*foundSkill) error {
	for _, it := range todo {
		ns := it.prop.Source.Namespace
		for {
			fmt.Fprintf(e.stdout, "Add %s (%d tools)? [Y/n/e: each tool] ", ns, len(it.prop.Manifest.Tools))
			ans, err := e.readLine()
			if err != nil && ans == "" {
				return fmt.Errorf("no answer for %s; nothing added", ns)
			}
			switch strings.ToLower(strings.TrimSpace(ans)) {
			case "", "y", "yes":
			case "n", "no":
				it.skip = true
			case "e":
				d, err := decideEach(e, it.review)
				if err != nil {
					return err
				}
				it.decisions = d
			default:
				fmt.Fprintln(e.stdout, "  answer y, n or e")
				continue
			}
			break
		}
	}
	for _, f := range skills {
		fmt.Fprintf(e.stdout, "Import the skill %s? [Y/n] ", f.Name)
		ans, err := e.readLine()
		if err != nil && ans == "" {
			return fmt.Errorf("no answer for the skill %s; nothing added", f.Name)
		}
		if a := strings.ToLower(strings.TrimSpace(ans)); a == "n" || a == "no" {
			f.Status = "declined"
		}
	}
	return nil
}

// addAll adds each server of todo the person did not skip (addReviewed),
// show first showing it when not nil, into res.
func addAll(ctx context.Context, e *env, h *hub.Hub, todo []*importing, res *importResult, quiet bool, show func(*importing)) error {
	for _, it := range todo {
		if it.skip {
			continue
		}
		if show != nil {
			show(it)
		}
		ns, err := addReviewed(ctx, e, h, it, quiet)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			msg := h.Scrub(err.Error())
			res.failed = append(res.failed, map[string]string{"namespace": it.prop.Source.Namespace, "error": msg})
			if !quiet {
				fmt.Fprintf(e.stdout, "! %s not added: %s\n", it.prop.Source.Namespace, msg)
			}
			continue
		}
		res.added = append(res.added, ns)
	}
	return nil
}

// addReviewed stores it as reviewed: the source and its manifest, its
// plain-text credential moved into the keychain, and its review, with the
// person's decisions (none: as proposed).
func addReviewed(ctx context.Context, e *env, h *hub.Hub, it *importing, quiet bool) (string, error) {
	if err := h.Accept(ctx, it.prop); err != nil {
		return "", err
	}
	ns := it.prop.Source.Namespace
	if it.req.Secret != "" {
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Value: it.req.Secret}); err != nil {
			return "", fmt.Errorf("added %s, but storing its credential failed (run `capabilities hub auth %s`): %w", ns, ns, err)
		}
		if !quiet {
			fmt.Fprintf(e.stdout, "  moved %s\n", movedCredential(it.from, ns))
		}
	}
	if err := h.AcceptReview(ctx, it.review, it.decisions, "review"); err != nil {
		return "", fmt.Errorf("added %s, but recording its review failed (run `capabilities hub review %s`): %w", ns, ns, err)
	}
	if !quiet {
		fmt.Fprintf(e.stdout, "Added %s with %d tools, reviewed.\n", ns, len(it.prop.Manifest.Tools))
	}
	return ns, nil
}
