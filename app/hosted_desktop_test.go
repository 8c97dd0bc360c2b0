package app_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capabilities-sh/capabilities/app"
	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// hostedScenario: the person signed in to a real hosted hub
// (engine/hosted's Server on PostgreSQL, people signing in through
// oauth2-mock-server) with `hub login` (hostedlogin: the IdP's sign-in and
// the consent page in the person's browser; the sign-in in the hub's
// folder, the tokens in the secret store's file as NO_KEYRING=1 keeps
// them); the tenant has server-everything as a remote source (streamable
// HTTP, egress to 127.0.0.1 allowed). A write that asks through the
// tenant's /mcp raises the app's notification in the desktop session, as a
// local call's (the hub named in its body); "Allow once" picked through
// dunst's context menu is recorded by the hosted hub via desktop, by the
// person's tenant, and the hosted run completes, the write made once.
func (d *desktop) hostedScenario() {
	t := d.t
	hs := startRealHosted(t)
	tenant := hs.Tenant("alice")
	upstream, acted := countedEverything(t)
	hs.addSource(t, tenant, "everything", upstream)
	t.Setenv("NO_KEYRING", "1")
	dir := filepath.Join(d.home, "hub")
	secrets := app.LoginSecrets(dir, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	l, err := hostedlogin.SignIn(ctx, hostedlogin.Options{URL: hs.URL, Open: hs.browser(t, "alice")})
	if err != nil {
		t.Fatal(err)
	}
	if l.Account != "" && l.Account != tenant {
		t.Errorf("hub login signed in as %q, want the IdP subject's tenant %s", l.Account, tenant)
	}
	if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
		t.Fatal(err)
	}
	d.start()
	write := "everything." + model.ToolIdent(everythingWrite)
	runID, callID := hs.executeWrite(t, l.Tokens().AccessToken, "return await "+write+"({})")
	note := d.mon.notify(t, write)
	if !strings.Contains(note.body, "on the hosted hub "+strings.TrimPrefix(hs.URL, "http://")) || !strings.Contains(note.body, "run "+runID+", call "+callID) {
		t.Errorf("the hosted call's notification does not name the hub and the call:\n%s", note.body)
	}
	if n := acted.Load(); n != 0 {
		t.Fatalf("the upstream was asked to act %d times before the decision", n)
	}
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("the hosted run to complete after Allow once", func() bool {
		return hs.run(t, tenant, runID).Status == model.RunCompleted
	})
	dec := hs.run(t, tenant, runID).PendingItem(callID).Decision
	if dec == nil || dec.Choice != model.ChoiceOnce || dec.Channel != "desktop" || dec.By != tenant {
		t.Errorf("the hosted decision: %+v; want once via desktop by %s", dec, tenant)
	}
	if n := acted.Load(); n != 1 {
		t.Errorf("the hosted upstream was asked to act %d times, want once", n)
	}
	d.waitFor("the hosted call's notification withdrawn", func() bool { return d.mon.closed(note.id) })
	if err := d.app.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(); code != 0 {
		t.Errorf("the app exited %d; stderr:\n%s", code, d.stderr)
	}
	if s := d.stderr.String(); strings.Contains(s, "signed out") {
		t.Errorf("the app said it was signed out:\n%s", s)
	}
	_ = os.Remove(filepath.Join(dir, hostedlogin.ListFile))
}
