package app

import (
	"context"
	"fmt"
	"html"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/godbus/dbus/v5"
)

// actionSignIn is the action of a sign-in's notification besides its
// default (a click on it): both open the Sources screen.
const actionSignIn = "sign-in"

// signIns are the connections that wait for a person to sign in (OAuth):
// the tray lists them, and each new one raises one notification whose click
// opens the Sources screen, where "Sign in" runs the flow of `capabilities
// hub auth`. A notification is withdrawn once its connection is signed in.
type signIns struct {
	needs  []hub.SignInNeed
	shown  map[string]uint32 // namespace/connection → its notification (0: none)
	byNote map[uint32]string // notification → namespace/connection
}

func needKey(n hub.SignInNeed) string { return n.Namespace + "/" + n.Connection }

// who names a connection as the person sees it: the namespace, with the
// connection when it is not the default one.
func who(n hub.SignInNeed) string {
	if n.Connection == "" || n.Connection == hub.DefaultConnection {
		return n.Namespace
	}
	return n.Namespace + "/" + n.Connection
}

// checkSignIns reads which connections need a sign-in (at start, and when
// sources or connections change): a new one is notified, one signed in
// since has its notification withdrawn.
func (a *App) checkSignIns(ctx context.Context) {
	if a.sign == nil {
		a.sign = &signIns{shown: map[string]uint32{}, byNote: map[uint32]string{}}
	}
	s := a.sign
	needs, err := a.hub.SignInNeeded(ctx)
	if err != nil {
		a.log.Warn("reading which connections need a sign-in", "err", err)
		return
	}
	s.needs = needs
	now := map[string]bool{}
	for _, n := range needs {
		now[needKey(n)] = true
	}
	for k, id := range s.shown {
		if now[k] {
			continue
		}
		delete(s.shown, k)
		if id != 0 {
			delete(s.byNote, id)
			if a.notes != nil {
				a.notes.close(id)
			}
			a.log.Info("withdrew the sign-in notification", "connection", k, "notification", id)
		}
	}
	for _, n := range needs {
		k := needKey(n)
		if _, ok := s.shown[k]; ok {
			continue
		}
		s.shown[k] = 0
		if a.notes == nil {
			a.log.Info("a connection needs a sign-in; no notification daemon: the tray lists it", "connection", k, "reason", n.Reason)
			continue
		}
		id, err := a.notes.signIn(n)
		if err != nil {
			a.log.Warn("raising a sign-in notification", "connection", k, "err", err)
			continue
		}
		s.shown[k], s.byNote[id] = id, k
		a.log.Info("notified a sign-in", "connection", k, "reason", n.Reason, "notification", id)
	}
}

// actSignIn handles an action of a sign-in's notification: the Sources
// screen opens. False when note is not a sign-in's.
func (a *App) actSignIn(note uint32, action string) bool {
	if a.sign == nil {
		return false
	}
	if _, ok := a.sign.byNote[note]; !ok {
		return false
	}
	if action == actionDefault || action == actionSignIn {
		a.openPage("sources")
	}
	return true
}

// closedSignIn forgets a sign-in's notification the server closed; the
// connection stays in the tray until it is signed in.
func (a *App) closedSignIn(note uint32) {
	if a.sign == nil {
		return
	}
	if k, ok := a.sign.byNote[note]; ok {
		delete(a.sign.byNote, note)
		if a.sign.shown[k] == note {
			a.sign.shown[k] = 0
		}
	}
}

// signInTitle is the tray item's title, "" when nothing needs a sign-in.
func (a *App) signInTitle() string {
	if a.sign == nil || len(a.sign.needs) == 0 {
		return ""
	}
	var names []string
	for _, n := range a.sign.needs {
		names = append(names, who(n))
	}
	return "Sign in to " + strings.Join(names, ", ") + "…"
}

// signInSummary is a sign-in notification's summary.
func signInSummary(n hub.SignInNeed) string {
	if n.Reason == "" || n.Reason == "not signed in yet" {
		return who(n) + " needs you to sign in"
	}
	return who(n) + " needs you to sign in again"
}

// signIn raises a sign-in's notification: its click (and "Sign in", where
// the server shows actions) opens the Sources screen. It stays until the
// connection is signed in or the person dismisses it.
func (n *notifier) signIn(need hub.SignInNeed) (uint32, error) {
	body := fmt.Sprintf("%s/%s: %s.", need.Namespace, need.Connection, need.Reason)
	var actions []string
	if n.actions {
		actions = []string{actionDefault, "Open", actionSignIn, "Sign in"}
		body += "\nSign in opens the Sources screen."
	} else {
		body += "\nSign in on the Sources screen (the tray's Sign in…) or with `capabilities hub auth " + need.Namespace + "`."
	}
	if n.markup {
		body = html.EscapeString(body)
	}
	var id uint32
	err := n.obj.Call(notifyName+".Notify", 0, "capabilities", uint32(0), "dialog-password",
		signInSummary(need), body, actions,
		map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(1)), "resident": dbus.MakeVariant(true)}, int32(0)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising a sign-in notification: %w", err)
	}
	return id, nil
}
