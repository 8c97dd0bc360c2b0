package app

import (
	"fmt"
	"html"
	"slices"
	"strings"

	"github.com/capabilities-sh/capabilities/engine/visible"
	"github.com/godbus/dbus/v5"
)

// The freedesktop notification service.
const (
	notifyName = "org.freedesktop.Notifications"
	notifyPath = "/org/freedesktop/Notifications"
)

// Action keys of a pending call's notification.
const (
	actionOnce    = "once"
	actionDeny    = "deny"
	actionDefault = "default" // a click on the notification: Open
)

// notifier raises the pending calls' notifications over D-Bus and hands the
// server's signals (an action picked, a notification closed) to the loop.
type notifier struct {
	obj     dbus.BusObject
	actions bool // the server shows actions
	markup  bool // the server reads markup in bodies
	// server is the notification server's unique name on the bus
	// (":1.5"), and owner looks it up again (the server restarted). Its
	// signals come only from it: any process on the session bus can send
	// an ActionInvoked, and one that is not the server's would record a
	// decision no person made. Both are used by the signals' goroutine
	// only.
	server string
	owner  func() string
}

// newNotifier connects to the notification server; nil, nil when none is
// on the bus.
func newNotifier(conn *dbus.Conn, events chan<- func(), a *App) (*notifier, error) {
	if !hasOwner(conn, notifyName) {
		return nil, nil
	}
	n := &notifier{obj: conn.Object(notifyName, notifyPath), owner: func() string {
		var owner string
		if err := conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, notifyName).Store(&owner); err != nil {
			return ""
		}
		return owner
	}}
	n.server = n.owner()
	var caps []string
	if err := n.obj.Call(notifyName+".GetCapabilities", 0).Store(&caps); err != nil {
		return nil, fmt.Errorf("asking the notification server what it shows: %w", err)
	}
	n.actions = slices.Contains(caps, "actions")
	n.markup = readsMarkup(caps)
	if err := conn.AddMatchSignal(dbus.WithMatchSender(notifyName), dbus.WithMatchObjectPath(notifyPath), dbus.WithMatchInterface(notifyName)); err != nil {
		return nil, fmt.Errorf("listening to the notification server: %w", err)
	}
	signals := make(chan *dbus.Signal, 32)
	conn.Signal(signals)
	go func() {
		for s := range signals {
			if f := n.event(s, a); f != nil {
				events <- f
			}
		}
	}()
	return n, nil
}

// event is what the loop does for a signal of the notification server (an
// action picked, a notification closed); nil for any other signal, and for
// one sent by another process than the server.
func (n *notifier) event(s *dbus.Signal, a *App) func() {
	if s.Path != notifyPath || !strings.HasPrefix(s.Name, notifyName+".") || !n.fromServer(s.Sender) {
		return nil
	}
	switch {
	case s.Name == notifyName+".ActionInvoked" && len(s.Body) == 2:
		id, _ := s.Body[0].(uint32)
		key, _ := s.Body[1].(string)
		return func() { a.act(id, key) }
	case s.Name == notifyName+".NotificationClosed" && len(s.Body) >= 1:
		id, _ := s.Body[0].(uint32)
		return func() { a.closed(id) }
	}
	return nil
}

// fromServer reports whether sender is the notification server, looked up
// again when it is not the one known (a server that restarted has a new
// name).
func (n *notifier) fromServer(sender string) bool {
	if sender == "" {
		return false
	}
	if sender != n.server {
		n.server = n.owner()
	}
	return sender == n.server
}

// readsMarkup reports whether a notification server with these
// capabilities reads markup in bodies, so that text meant as text must be
// escaped: "body-markup", and also "body-hyperlinks" and "body-images",
// which are markup (<a href>, <img>) too. dunst 1.9 lists only
// "body-hyperlinks" and shows <b> bold and &amp; as &.
func readsMarkup(caps []string) bool {
	return slices.ContainsFunc(caps, func(c string) bool {
		return c == "body-markup" || c == "body-hyperlinks" || c == "body-images"
	})
}

// noteBody is the body of c's notification: what the tool does, the
// arguments, why it waits, the connection (when the source has one), the
// run and the call. The tool's summary and the reason come from the upstream: each is shown as
// one line with its hidden characters escaped (visible.Line), so a
// description cannot reverse its text with a bidi override or forge lines;
// with markup every character shows as itself.
//
// A notification server shows a few lines at most (dunst: 300 pixels, and
// it cuts the middle out of a longer body), so what an upstream controls is
// shortened, keeping its head and tail (cut): a long description or tool
// name cannot push the arguments out of sight while "Allow once" is
// offered. The approval window shows them whole.
func noteBody(c *call, markup, actions bool) string {
	var lines []string
	if c.summary != "" {
		lines = append(lines, visible.Line(cut(c.summary, noteLineChars)))
	}
	if c.args != "" {
		lines = append(lines, c.args)
	}
	lines = append(lines, visible.Line(cut(c.message, noteLineChars)))
	if c.connection != "" {
		lines = append(lines, "through the connection "+visible.Line(cut(c.connection, noteLineChars)))
	}
	lines = append(lines, "run "+c.run+", call "+c.id)
	if !actions {
		lines = append(lines, "Decide in the tray's menu or with `capabilities hub approve "+c.run+"`.")
	}
	body := strings.Join(lines, "\n")
	if markup {
		body = html.EscapeString(body)
	}
	return body
}

// How many characters of a tool's address, and of a line an upstream
// wrote, a notification or the tray's menu shows.
const (
	noteAddressChars = 64
	noteLineChars    = 120
)

// cut is s in at most n characters: its head and tail around "…" when it
// is longer (the end of a tool's address tells tools apart as much as its
// start).
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) * 2 / 3
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// noteTitle is the summary of c's notification.
func noteTitle(c *call) string {
	return "Approve " + visible.Line(cut(c.address, noteAddressChars)) + "?"
}

// notify raises c's notification: its summary names the tool's address;
// where the server shows actions, "Allow once", "Deny" and the default
// "Open". It stays until acted on or withdrawn.
func (n *notifier) notify(c *call) (uint32, error) {
	body := noteBody(c, n.markup, n.actions)
	var actions []string
	if n.actions {
		actions = []string{actionDefault, "Open", actionOnce, "Allow once", actionDeny, "Deny"}
	}
	hints := map[string]dbus.Variant{
		"urgency":  dbus.MakeVariant(byte(1)),
		"resident": dbus.MakeVariant(true),
	}
	var id uint32
	err := n.obj.Call(notifyName+".Notify", 0, "capabilities", uint32(0), "dialog-question",
		noteTitle(c), body, actions, hints, int32(0)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising a notification: %w", err)
	}
	return id, nil
}

// more raises, or updates in place (replaces, 0 for a new one), the
// notification of the pending calls over the budget: how many, which
// tools, and "Open" for the approval window. It offers no decision: each
// call is decided where its arguments show.
func (n *notifier) more(replaces uint32, addresses []string) (uint32, error) {
	summary := fmt.Sprintf("%d more calls wait for your approval", len(addresses))
	if len(addresses) == 1 {
		summary = "1 more call waits for your approval"
	}
	const listed = 5
	var shown []string
	for _, a := range addresses[:min(len(addresses), listed)] {
		shown = append(shown, visible.Line(cut(a, noteAddressChars)))
	}
	body := strings.Join(shown, ", ")
	if len(addresses) > listed {
		body += fmt.Sprintf(" and %d more", len(addresses)-listed)
	}
	body += "\nOpen the approval window to read each one's arguments and decide."
	if n.markup {
		body = html.EscapeString(body)
	}
	var actions []string
	if n.actions {
		actions = []string{actionDefault, "Open"}
	}
	hints := map[string]dbus.Variant{
		"urgency":  dbus.MakeVariant(byte(1)),
		"resident": dbus.MakeVariant(true),
	}
	var id uint32
	err := n.obj.Call(notifyName+".Notify", 0, "capabilities", replaces, "dialog-question", summary, body, actions, hints, int32(0)).Store(&id)
	if err != nil {
		return 0, fmt.Errorf("raising a notification: %w", err)
	}
	return id, nil
}

// close withdraws a notification (it may be gone already).
func (n *notifier) close(id uint32) {
	_ = n.obj.Call(notifyName+".CloseNotification", 0, id).Err
}
