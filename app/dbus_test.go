package app_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/godbus/dbus/v5"
)

// monitor records the notification traffic on the session bus (a D-Bus
// monitor: the session's bus allows eavesdropping), as dbus-monitor would.
type monitor struct {
	mu   sync.Mutex
	msgs []seen
}

type seen struct {
	msg *dbus.Message
	at  time.Time
}

// note is one Notify call the app made.
type note struct {
	summary string
	body    string
	actions []string
	serial  uint32
	id      uint32 // from the server's reply
	at      time.Time
}

func startMonitor(t *testing.T) *monitor {
	t.Helper()
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatalf("connecting the monitor: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	rules := []string{"type='method_call',interface='org.freedesktop.Notifications'", "type='signal',interface='org.freedesktop.Notifications'", "type='method_return'"}
	if err := conn.BusObject().Call("org.freedesktop.DBus.Monitoring.BecomeMonitor", 0, rules, uint32(0)).Err; err != nil {
		t.Fatalf("becoming a monitor of the session bus: %v", err)
	}
	m := &monitor{}
	ch := make(chan *dbus.Message, 256)
	conn.Eavesdrop(ch)
	go func() {
		for msg := range ch {
			m.mu.Lock()
			m.msgs = append(m.msgs, seen{msg, time.Now()})
			m.mu.Unlock()
		}
	}()
	return m
}

func member(msg *dbus.Message) string {
	v, _ := msg.Headers[dbus.FieldMember].Value().(string)
	return v
}

func header[T any](msg *dbus.Message, f dbus.HeaderField) T {
	v, _ := msg.Headers[f].Value().(T)
	return v
}

// count is how many method calls to the notification server named member
// were seen.
func (m *monitor) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.msgs {
		if s.msg.Type == dbus.TypeMethodCall && member(s.msg) == name {
			n++
		}
	}
	return n
}

// notes lists the Notify calls sent after serial whose summary holds text,
// oldest first (their replies not awaited).
func (m *monitor) notes(after uint32, text string) []note {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []note
	for _, s := range m.msgs {
		msg := s.msg
		if msg.Type != dbus.TypeMethodCall || member(msg) != "Notify" || msg.Serial() <= after || len(msg.Body) < 8 {
			continue
		}
		summary, _ := msg.Body[3].(string)
		body, _ := msg.Body[4].(string)
		actions, _ := msg.Body[5].([]string)
		if strings.Contains(summary, text) {
			out = append(out, note{summary: summary, body: body, actions: actions, serial: msg.Serial(), at: s.at})
		}
	}
	return out
}

// notify waits for a Notify whose summary holds address, and its reply.
func (m *monitor) notify(t *testing.T, address string) note {
	t.Helper()
	return m.notifyAfter(t, address, 0)
}

// notifyAfter is notify for a call sent after serial.
func (m *monitor) notifyAfter(t *testing.T, address string, serial uint32) note {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
	for time.Now().Before(deadline) {
		if n, ok := m.find(address, serial); ok {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no Notify naming %s (with its reply) on the bus", address)
	return note{}
}

func (m *monitor) find(address string, after uint32) (note, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, s := range m.msgs {
		msg := s.msg
		if msg.Type != dbus.TypeMethodCall || member(msg) != "Notify" || msg.Serial() <= after || len(msg.Body) < 8 {
			continue
		}
		summary, _ := msg.Body[3].(string)
		if !strings.Contains(summary, address) {
			continue
		}
		body, _ := msg.Body[4].(string)
		actions, _ := msg.Body[5].([]string)
		n := note{summary: summary, body: body, actions: actions, serial: msg.Serial(), at: s.at}
		sender := header[string](msg, dbus.FieldSender)
		for _, r := range m.msgs[i+1:] {
			if r.msg.Type == dbus.TypeMethodReply && header[uint32](r.msg, dbus.FieldReplySerial) == msg.Serial() &&
				header[string](r.msg, dbus.FieldDestination) == sender && len(r.msg.Body) == 1 {
				n.id, _ = r.msg.Body[0].(uint32)
				return n, true
			}
		}
	}
	return note{}, false
}

// closed reports whether a CloseNotification of id was sent.
func (m *monitor) closed(id uint32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.msgs {
		if s.msg.Type == dbus.TypeMethodCall && member(s.msg) == "CloseNotification" && len(s.msg.Body) == 1 && s.msg.Body[0] == id {
			return true
		}
	}
	return false
}

// trayMenu is the tray item's dbusmenu, as a tray host reads it.
type trayMenu struct {
	service string
	path    dbus.ObjectPath
	items   []menuItem
}

type menuItem struct {
	id      int32
	label   string
	kind    string
	visible bool
	checked bool // a checkmark item's toggle-state is 1
}

// menu reads the menu of the registered item ("service" or
// "service/path", as the watcher lists it).
func (d *desktop) menu(item string) trayMenu {
	d.t.Helper()
	service, path := item, dbus.ObjectPath("/StatusNotifierItem")
	if i := strings.Index(item, "/"); i > 0 {
		service, path = item[:i], dbus.ObjectPath(item[i:])
	}
	v, err := d.bus.Object(service, path).GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		d.t.Fatalf("reading the tray item's Menu: %v", err)
	}
	m := trayMenu{service: service}
	m.path, _ = v.Value().(dbus.ObjectPath)
	var rev uint32
	var root struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	if err := d.bus.Object(service, m.path).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &root); err != nil {
		d.t.Fatalf("dbusmenu GetLayout: %v", err)
	}
	for _, c := range root.Children {
		s, ok := c.Value().([]any)
		if !ok || len(s) != 3 {
			d.t.Fatalf("a dbusmenu item that is not (ia{sv}av): %#v", c.Value())
		}
		it := menuItem{visible: true}
		it.id, _ = s[0].(int32)
		props, _ := s[1].(map[string]dbus.Variant)
		if p, ok := props["label"]; ok {
			it.label, _ = p.Value().(string)
		}
		if p, ok := props["type"]; ok {
			it.kind, _ = p.Value().(string)
		}
		if p, ok := props["visible"]; ok {
			it.visible, _ = p.Value().(bool)
		}
		if p, ok := props["toggle-state"]; ok {
			v, _ := p.Value().(int32)
			it.checked = v == 1
		}
		m.items = append(m.items, it)
	}
	return m
}

var reviewLabel = regexp.MustCompile(`^Review (\d+ )?new or changed tools?$`)

// labels are the visible items' labels; a separator is "—", and the review
// item's count is N.
func (m trayMenu) labels() []string {
	var out []string
	for _, it := range m.items {
		switch {
		case !it.visible:
		case it.kind == "separator":
			out = append(out, "—")
		case reviewLabel.MatchString(it.label):
			out = append(out, "Review N new or changed tools")
		default:
			out = append(out, it.label)
		}
	}
	return out
}

// checked says whether the item labelled label is checked.
func (m trayMenu) checked(label string) bool {
	for _, it := range m.items {
		if it.label == label {
			return it.checked
		}
	}
	return false
}

// event clicks the item labelled label, as a tray host does.
func (m trayMenu) event(bus *dbus.Conn, label string) error {
	for _, it := range m.items {
		if it.label == label && it.visible {
			return bus.Object(m.service, m.path).Call("com.canonical.dbusmenu.Event", 0, it.id, "clicked", dbus.MakeVariant(""), uint32(time.Now().Unix())).Err
		}
	}
	return fmt.Errorf("no visible menu item %q in %v", label, m.labels())
}
