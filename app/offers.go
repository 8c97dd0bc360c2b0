package app

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/harness"
	"github.com/capabilities-sh/capabilities/engine/harness/watch"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/godbus/dbus/v5"
)

// Action keys of an import offer's notification.
const (
	actionAdd    = "add"
	actionNotNow = "not-now"
)

// watchHarnesses runs the harness watcher over the person's agent configs
// (their user configs: the app's working directory is no project) and
// hands each offer to the loop. wait returns once it stopped.
func (a *App) watchHarnesses(ctx context.Context) (wait func(), err error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("watching the agents' configs: %w", err)
	}
	w, err := watch.New(harness.Env{Home: home, Getenv: os.Getenv, LookupEnv: os.LookupEnv}, watch.Options{
		Dir: a.dir,
		Sources: func(ctx context.Context) ([]model.Source, error) {
			recs, err := a.hub.Sources(ctx)
			if err != nil {
				return nil, err
			}
			out := make([]model.Source, len(recs))
			for i, r := range recs {
				out[i] = r.Source
			}
			return out, nil
		},
		Log: a.log,
	})
	if err != nil {
		return nil, err
	}
	a.watcher = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil {
			a.log.Warn("watching the agents' configs", "err", err)
		}
	}()
	go func() {
		for o := range w.Offers() {
			select {
			case a.events <- func() { a.offer(o) }:
			case <-ctx.Done():
			}
		}
	}()
	a.log.Info("watching the agents' configs", "files", len(w.Paths()))
	return func() { <-done }, nil
}

// offer shows an import offer: a notification "Claude Code added `linear`
// — add it to the hub?" with Add and Not now. Without a notification
// daemon that shows actions, it says so in the log (`hub import` adds it).
func (a *App) offer(o watch.Offer) {
	if a.gone.Load() != nil {
		// No hub to add it to: `hub import` offers it again once there is.
		a.log.Info("an agent's config gained a server; the hub is gone: nothing to offer", "harness", o.Harness, "server", o.Server.Name)
		return
	}
	if a.ownEndpoint(o.Server.URL) {
		// An agent connected to this app's endpoint by hand: it reaches
		// the hub already, and the hub refuses itself as a source.
		a.log.Info("an agent's config names this app's own endpoint: nothing to offer", "harness", o.Harness, "server", o.Server.Name)
		return
	}
	a.log.Info("import offer", "harness", o.Harness, "server", o.Server.Name, "namespace", o.Proposal.Namespace, "seen", o.At)
	if a.notes == nil || !a.notes.actions {
		a.log.Warn("an agent's config gained a server; no notification can offer it: run `capabilities hub import`", "message", o.Message())
		return
	}
	id, err := a.notes.offer(o)
	if err != nil {
		a.log.Warn("raising an import offer", "server", o.Server.Name, "err", err)
		return
	}
	a.offers[id] = o
}

// actOffer handles Add or Not now picked in an offer's notification.
func (a *App) actOffer(note uint32, o watch.Offer, action string) {
	delete(a.offers, note)
	// The offer is answered: it leaves the screen (it is resident, so the
	// server keeps it after an action).
	if a.notes != nil {
		a.notes.close(note)
	}
	switch action {
	case actionAdd:
		// Adding starts the server to list its tools: not in the loop.
		a.records.Go(func() {
			ns, err := importOffer(a.ctx, a.hub, o.Proposal)
			if err != nil {
				a.log.Warn("adding an offered server", "server", o.Server.Name, "err", err)
				return
			}
			a.log.Info("added an offered server", "server", o.Server.Name, "namespace", ns)
			if err := a.win.Show("review", false); err != nil {
				a.log.Warn("opening the review", "err", err)
			}
		})
	case actionNotNow:
		if err := a.watcher.Decline(o); err != nil {
			a.log.Warn("declining an import offer", "server", o.Server.Name, "err", err)
		}
	}
}

// importOffer adds an offered server as `hub import` does (propose, accept,
// and a plain-text credential moved into the keychain); its tools then wait
// for the person's review.
func importOffer(ctx context.Context, h *hub.Hub, p harness.Proposal) (string, error) {
	req, _, err := p.Request()
	if err != nil {
		return "", err
	}
	prop, err := h.Propose(ctx, req)
	if err != nil {
		return "", err
	}
	if err := h.Accept(ctx, prop); err != nil {
		return "", err
	}
	ns := prop.Source.Namespace
	if req.Secret != "" {
		if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: ns, Value: req.Secret}); err != nil {
			return ns, fmt.Errorf("added %s, but storing its credential failed (run `capabilities hub auth %s`): %w", ns, ns, err)
		}
	}
	return ns, nil
}

// offerCommandChars is how much of an offered server's command (or URL)
// its notification shows: "Add" consents to running it.
const offerCommandChars = 240

// offerText is an import offer's notification: its summary and body. The
// server's name and command come from a file an agent (or anything) may
// write: each shows as one line with its hidden characters escaped (a bidi
// override cannot make "exe.sj.ekaf" read "fake.js.exe"), and a long
// command is shortened, head and tail, saying how much is not shown, so it
// cannot push the rest out of the notification.
func offerText(o watch.Offer, markup bool) (summary, body string) {
	what := model.Redact("URL", o.Server.URL)
	if o.Server.URL == "" {
		what = model.QuoteCommand(append([]string{o.Server.Command}, model.RedactArgs(o.Server.Args)...))
	}
	if r := []rune(what); len(r) > offerCommandChars {
		head := offerCommandChars * 2 / 3
		tail := offerCommandChars - head
		what = fmt.Sprintf("%s …[%d characters not shown]… %s", string(r[:head]), len(r)-head-tail, string(r[len(r)-tail:]))
	}
	body = fmt.Sprintf("%s\nin %s\nIt would be the hub's source %q; its tools wait for your review.", visible.Line(what), visible.Line(o.Path), o.Proposal.Namespace)
	if markup {
		body = html.EscapeString(body)
	}
	return visible.Line(cut(o.Message(), noteLineChars)), body
}

// offer raises an import offer's notification.
func (n *notifier) offer(o watch.Offer) (uint32, error) {
	summary, body := offerText(o, n.markup)
	var id uint32
	err := n.obj.Call(notifyName+".Notify", 0, "capabilities", uint32(0), "list-add",
		summary, body, []string{actionAdd, "Add", actionNotNow, "Not now"},
		map[string]dbus.Variant{"resident": dbus.MakeVariant(true)}, int32(0)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising an import offer: %w", err)
	}
	return id, nil
}

// ownEndpoint says whether raw is the address of the MCP endpoint this app
// serves (its port on a loopback name: 127.0.0.1, localhost or ::1).
func (a *App) ownEndpoint(raw string) bool {
	if raw == "" || a.endpoint == "" {
		return false
	}
	u, err1 := url.Parse(raw)
	me, err2 := url.Parse(a.endpoint)
	if err1 != nil || err2 != nil || u.Port() != me.Port() {
		return false
	}
	loopback := func(h string) bool {
		ip := net.ParseIP(h)
		return strings.EqualFold(h, "localhost") || ip != nil && ip.IsLoopback()
	}
	return loopback(u.Hostname()) && loopback(me.Hostname())
}
