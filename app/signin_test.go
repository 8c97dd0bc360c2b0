package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// signInScenario: a source behind OAuth (oauth2-mock-server in front of
// server-everything) added before anyone signed in.
//
//   - the tray lists "Sign in to acme…" and one notification says "acme
//     needs you to sign in", with Open (default) and Sign in;
//   - its click opens the console at #sources (the browser stand-in gets
//     the one-time link); in that console the person signs in (the page's
//     requests: POST /api/signin, then the authorization page followed as
//     the browser would) → the app withdraws the notification and the tray
//     item;
//   - the server revokes the tokens and a call from another process fails
//     → a new notification says "acme needs you to sign in again", the tray
//     lists the sign-in again, and its item opens the Sources screen.
func (d *desktop) signInScenario() {
	t := d.t
	srv := testenv.StartOAuthServer(t)
	d.cli("hub", "add", "--yes", "--namespace", "acme", srv.MCP)
	d.start()
	item := d.trayItem()
	const label = "Sign in to acme…"
	d.waitFor("the tray to list the sign-in", func() bool { return slices.Contains(d.menu(item).labels(), label) })
	note := d.mon.notify(t, "acme needs you to sign in")
	if diff := cmp.Diff("acme needs you to sign in", note.summary); diff != "" {
		t.Errorf("the notification's summary (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"default", "Open", "sign-in", "Sign in"}, note.actions); diff != "" {
		t.Errorf("the notification's actions (-want +got):\n%s", diff)
	}

	// Its click opens the console at the Sources screen.
	if out, err := exec.Command("dunstctl", "action", "0").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl action: %v\n%s", err, out)
	}
	d.waitFor("the notification's click to open the console", func() bool { return len(d.links()) == 1 })
	link, ok := strings.CutSuffix(d.links()[0], "#sources")
	if !ok {
		t.Fatalf("the browser got %q, want the console's link at #sources", d.links()[0])
	}

	// The person signs in there: the page's requests.
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: testenv.Timeout(30 * time.Second)}
	page := func(method, path string, body any, v any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequest(method, origin+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if body != nil {
			req.Header.Set("Origin", origin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-CSRF-Token", csrfOf(t, c, origin))
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 || json.Unmarshal(data, v) != nil {
			t.Fatalf("%s %s: %s %s", method, path, res.Status, data)
		}
	}
	if res, err := c.Get(link); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("opening the console's link: %v %v", err, res)
	}
	var started struct {
		State   string `json:"state"`
		AuthURL string `json:"authUrl"`
	}
	page(http.MethodPost, "/api/signin", map[string]string{"namespace": "acme", "clientId": "desktop-test"}, &started)
	if started.State != "waiting" || !strings.HasPrefix(started.AuthURL, srv.Issuer) {
		t.Fatalf("POST /api/signin answered %+v", started)
	}
	if res, err := c.Get(started.AuthURL); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the authorization page: %v %v", err, res)
	}
	d.waitFor("the console to say it signed in, and the source's tools listed", func() bool {
		var list struct {
			SignIns []struct {
				State string `json:"state"`
				Tools *int   `json:"tools"`
			} `json:"signIns"`
		}
		page(http.MethodGet, "/api/signins", nil, &list)
		return len(list.SignIns) == 1 && list.SignIns[0].State == "signed_in" && list.SignIns[0].Tools != nil && *list.SignIns[0].Tools > 0
	})
	d.waitFor("the app to withdraw the sign-in's notification", func() bool { return d.mon.closed(note.id) })
	d.waitFor("the tray to stop listing the sign-in", func() bool { return !slices.Contains(d.menu(item).labels(), label) })

	// Revoked: a call from another process needs a new sign-in.
	d.cli("hub", "review", "--accept", "acme")
	srv.Revoke(t)
	call := exec.Command(filepath.Join(d.bins, "capabilities"), "hub", "call", "acme.echo", `{"message":"revoked"}`)
	call.Env = append(d.env, "CAPABILITIES_NO_BROWSER=1")
	if out, err := call.CombinedOutput(); err == nil || !strings.Contains(string(out), "sign in again") {
		t.Fatalf("a call after the revocation: %v\n%s", err, out)
	}
	again := d.mon.notifyAfter(t, "acme needs you to sign in again", note.serial)
	if again.summary != "acme needs you to sign in again" {
		t.Errorf("the second notification says %q", again.summary)
	}
	d.waitFor("the tray to list the sign-in again", func() bool { return slices.Contains(d.menu(item).labels(), label) })
	if err := d.menu(item).event(d.bus, label); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the tray's sign-in item to open the Sources screen", func() bool {
		l := d.links()
		return len(l) == 2 && strings.HasSuffix(l[1], "#sources")
	})
	if n := d.mon.count("Notify"); n != 2 {
		t.Errorf("%d notifications, want 2 (one per need)", n)
	}
	_ = d.app.Process.Signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

// csrfOf reads the console session's CSRF token.
func csrfOf(t interface{ Fatalf(string, ...any) }, c *http.Client, origin string) string {
	res, err := c.Get(origin + "/api/session")
	if err != nil {
		t.Fatalf("GET /api/session: %v", err)
	}
	defer res.Body.Close()
	var s struct {
		CSRF string `json:"csrf"`
	}
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil || s.CSRF == "" {
		t.Fatalf("GET /api/session: no CSRF token (%v)", err)
	}
	return s.CSRF
}

// windowSignInScenario: the app with its own window (Wails over
// WebKitGTK), a source behind OAuth needing a sign-in. The tray's "Sign in
// to acme…" shows the window at Sources; there, by keyboard, the person
// gives the client ID and presses Sign in; the web view opens no window of
// its own, so the hub hands the authorization page to the system's browser
// (the stand-in gets it), which comes back to the hub's loopback listener:
// the notification and the tray item go away.
func (d *desktop) windowSignInScenario() {
	t := d.t
	srv := testenv.StartOAuthServer(t)
	d.cli("hub", "add", "--yes", "--namespace", "acme", srv.MCP)
	d.startBin(filepath.Join(d.bins, "window", "capabilities-desktop"))
	item := d.trayItem()
	const label = "Sign in to acme…"
	d.waitFor("the tray to list the sign-in", func() bool { return slices.Contains(d.menu(item).labels(), label) })
	note := d.mon.notify(t, "acme needs you to sign in")
	if err := d.menu(item).event(d.bus, label); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the tray's sign-in item to show the window at Sources", func() bool { return d.visible() == "capabilities — Sources" })
	// By keyboard: 4 (the Sources screen, read again, focus on its
	// heading), Tab to the sign-in's "A client registered by hand", Enter
	// opens it, Tab to the client ID, typed, Tab to Sign in, Enter. A press
	// before the page listed the sign-in lands elsewhere: then again.
	var authURL string
	handed := func() bool {
		for _, l := range d.links() {
			if strings.HasPrefix(l, srv.Issuer) {
				authURL = l // the last one: a press that came late started it again
			}
		}
		return authURL != ""
	}
	tries := 0
	for ; tries < 5 && !handed(); tries++ {
		d.key("4") // the first key the web view gets after it is shown can be lost
		d.key("4")
		time.Sleep(time.Second) // the page reads the sign-ins again (not an assertion: a miss is tried again)
		d.key("Tab")
		d.key("Return")
		d.key("Tab")
		if out, err := exec.Command("xdotool", "search", "--onlyvisible", "--name", "^capabilities",
			"windowfocus", "--sync", "type", "--clearmodifiers", "desktop-window").CombinedOutput(); err != nil {
			t.Fatalf("xdotool type: %v\n%s", err, out)
		}
		d.key("Tab")
		d.key("Return")
		deadline := time.Now().Add(testenv.Timeout(time.Second))
		for !handed() && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	d.waitFor("the hub to hand the authorization page to the system's browser", handed)
	t.Logf("measured: the sign-in started from the window after %d key sequence(s)", tries)
	if u, err := url.Parse(authURL); err != nil || !strings.Contains(u.Query().Get("client_id"), "desktop-window") {
		t.Fatalf("the browser got %q; want the authorization page for the client typed in the window", authURL)
	}
	d.screenshot("window-signin-waiting")
	if res, err := http.Get(authURL); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the authorization page: %v %v", err, res)
	}
	d.waitFor("the app to withdraw the sign-in's notification", func() bool { return d.mon.closed(note.id) })
	d.waitFor("the tray to stop listing the sign-in", func() bool { return !slices.Contains(d.menu(item).labels(), label) })
	d.screenshot("window-signin-done")
	if err := d.menu(item).event(d.bus, "Quit"); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Fatalf("Quit: exit %d, want 0; stderr:\n%s", code, d.stderr)
	}
}
