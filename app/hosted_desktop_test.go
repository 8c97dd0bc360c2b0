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

// hostedScenario: the person signed in to a hosted hub (`hub login`: its
// sign-in in the hub's folder, the tokens in the secret store's file as
// NO_KEYRING=1 keeps them); a write that asks there raises the app's
// notification in the desktop session, as a local call's (the hub named
// in its body); "Allow once" picked through dunst's context menu
// (pick-action.sh) is recorded by the hosted hub via desktop, by the
// person's account, and the hosted run completes, the write made once.
func (d *desktop) hostedScenario() {
	t := d.t
	const tenant = "tn_alice"
	base, ib := app.HostedWithAuth(t, tenant)
	t.Setenv("NO_KEYRING", "1")
	dir := filepath.Join(d.home, "hub")
	secrets := app.LoginSecrets(dir, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	l, err := hostedlogin.SignIn(ctx, hostedlogin.Options{URL: base, Open: app.Consent(tenant)})
	if err != nil {
		t.Fatal(err)
	}
	if err := hostedlogin.Save(ctx, secrets, dir, l); err != nil {
		t.Fatal(err)
	}
	d.start()
	hosted := ib.Tenants[tenant]
	runID, callID := hosted.Pending(t, `return await up.record({item: "hosted desktop"})`)
	note := d.mon.notify(t, "up.record")
	if !strings.Contains(note.body, "on the hosted hub "+strings.TrimPrefix(base, "http://")) || !strings.Contains(note.body, "run "+runID+", call "+callID) {
		t.Errorf("the hosted call's notification does not name the hub and the call:\n%s", note.body)
	}
	if !strings.Contains(note.body, `{&#34;item&#34;:&#34;hosted desktop&#34;}`) {
		t.Errorf("the hosted call's notification does not show its arguments:\n%s", note.body)
	}
	if out, err := exec.Command("dunstctl", "context").CombinedOutput(); err != nil {
		t.Fatalf("dunstctl context: %v\n%s", err, out)
	}
	d.waitFor("the hosted run to complete after Allow once", func() bool {
		return hosted.Run(t, runID).Status == model.RunCompleted
	})
	dec := hosted.Run(t, runID).PendingItem(callID).Decision
	if dec == nil || dec.Choice != model.ChoiceOnce || dec.Channel != "desktop" || dec.By != tenant {
		t.Errorf("the hosted decision: %+v; want once via desktop by %s", dec, tenant)
	}
	if n := hosted.UpstreamCalls(t); n != 1 {
		t.Errorf("the hosted upstream acted %d times, want once", n)
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
