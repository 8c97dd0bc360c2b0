package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

var consoleLink = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/\?token=[A-Za-z0-9_-]+`)

// startConsole runs `capabilities hub console args…` until the test ends
// and returns its stdout and a way to stop it and get its error.
func startConsole(t *testing.T, args ...string) (*testenv.Buffer, func() error) {
	t.Helper()
	out := &testenv.Buffer{}
	e := &env{stdin: strings.NewReader(""), stdout: out, stderr: io.Discard, log: slog.New(slog.DiscardHandler)}
	root := newRoot(e)
	root.SetArgs(append([]string{"hub", "console"}, args...))
	root.SetOut(out)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return out, stop
}

// waitFor polls until cond holds; the bound only ends a failing test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait := testenv.Timeout(30 * time.Second)
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func consoleHome(t *testing.T) *store.File {
	t.Helper()
	home := t.TempDir()
	t.Setenv("CAPABILITIES_HOME", home)
	t.Setenv("NO_KEYRING", "1")
	st, _, err := store.Init(filepath.Join(home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestConsoleOpensTheBrowserOnceAndServesThePage: `hub console` listens on
// loopback, hands the one-time link to the browser (CAPABILITIES_BROWSER)
// and prints it; the link opens the page once, and is refused the second
// time; the command ends when stopped.
func TestConsoleOpensTheBrowserOnceAndServesThePage(t *testing.T) {
	consoleHome(t)
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser")
	script := "#!/bin/sh\nprintf '%s' \"$1\" > " + opened + ".tmp && mv " + opened + ".tmp " + opened + "\n"
	if err := os.WriteFile(browser, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CAPABILITIES_BROWSER", browser)
	t.Setenv("CAPABILITIES_NO_BROWSER", "")
	out, stop := startConsole(t)
	waitFor(t, "the browser to be opened", func() bool { _, err := os.Stat(opened); return err == nil })
	got, err := os.ReadFile(opened)
	if err != nil {
		t.Fatal(err)
	}
	link := string(got)
	waitFor(t, "the link on stdout", func() bool { return strings.Contains(out.String(), link) })
	if !consoleLink.MatchString(link) || !strings.Contains(out.String(), "opened in your browser") {
		t.Fatalf("the browser got %q; stdout:\n%s", link, out)
	}

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: testenv.Timeout(30 * time.Second)}
	res, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "/app.js") {
		t.Fatalf("the link: %s %s", res.Status, page)
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	res, err = c.Get("http://" + u.Host + "/api/approvals")
	if err != nil {
		t.Fatal(err)
	}
	var list console.Approvals
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil || res.StatusCode != http.StatusOK || len(list.Approvals) != 0 {
		t.Fatalf("GET /api/approvals: %s %v %+v", res.Status, err, list)
	}
	res.Body.Close()
	res, err = http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("the link a second time: %s, want 403", res.Status)
	}
	if err := stop(); err != nil {
		t.Fatalf("the console ended with %v", err)
	}
}

// TestConsoleForOneRun: --run serves a page about that run until its
// pending call expires; a run that waits for nothing is refused.
func TestConsoleForOneRun(t *testing.T) {
	st := consoleHome(t)
	t.Setenv("CAPABILITIES_NO_BROWSER", "1")
	ctx := context.Background()
	now := time.Now().UTC()
	expires := now.Add(90 * time.Minute).Truncate(time.Minute)
	waiting := model.Run{ID: "r" + store.NewID()[:20], Status: model.RunAwaitingApproval, CreatedAt: now, UpdatedAt: now,
		Pending: []model.Pending{{ID: "c1", Kind: model.PendingApproval, Seq: 1, Address: "up.record", Message: "a write asks", ExpiresAt: expires}}}
	done := model.Run{ID: "r" + store.NewID()[:20], Status: model.RunCompleted, CreatedAt: now, UpdatedAt: now}
	late := model.Run{ID: "r" + store.NewID()[:20], Status: model.RunAwaitingApproval, CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour),
		Pending: []model.Pending{{ID: "c1", Kind: model.PendingApproval, Seq: 1, Address: "up.record", Message: "a write asks", ExpiresAt: now.Add(-time.Minute)}}}
	for _, r := range []model.Run{waiting, done, late} {
		if err := st.Put(ctx, store.Runs, r.ID, r); err != nil {
			t.Fatal(err)
		}
	}

	out, stop := startConsole(t, "--run", done.ID)
	if err := stop(); err == nil || !strings.Contains(err.Error(), "no call of it waits") {
		t.Fatalf("a console for a finished run: %v; stdout %q", err, out)
	}

	// A run whose pending call expired (no process has marked it yet): no
	// page that is dead before it opens, no link.
	out, stop = startConsole(t, "--run", late.ID)
	if err := stop(); err == nil || !strings.Contains(err.Error(), "expired at") || consoleLink.MatchString(out.String()) {
		t.Fatalf("a console for a run whose call expired: %v; stdout %q", err, out)
	}

	out, stop = startConsole(t, "--run", waiting.ID)
	waitFor(t, "the link on stdout", func() bool { return consoleLink.MatchString(out.String()) })
	if want := "works until " + expires.Local().Format("2006-01-02 15:04"); !strings.Contains(out.String(), want) {
		t.Errorf("stdout does not say %q:\n%s", want, out)
	}
	if strings.Contains(out.String(), "opened in your browser") {
		t.Errorf("CAPABILITIES_NO_BROWSER=1 and a browser was opened:\n%s", out)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
