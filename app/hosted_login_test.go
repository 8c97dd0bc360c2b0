package app

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/authserver"
	"github.com/capabilities-sh/capabilities/engine/hostedlogin"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/inbox/inboxtest"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consent is the person's browser at the authorization page: signed in as
// tenant (a cookie the test's authorization server reads), it allows the
// request and follows the redirect to hub login's loopback listener.
func consent(tenant string) func(string) error {
	return func(authURL string) error {
		hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodGet, authURL, nil)
		req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("the authorization page: %s: %s", res.Status, page)
		}
		form := url.Values{"decision": {"allow"}}
		for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
			form.Set(m[1], html.UnescapeString(m[2]))
		}
		u, _ := url.Parse(authURL)
		origin := u.Scheme + "://" + u.Host
		req, _ = http.NewRequest(http.MethodPost, origin+"/authorize", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		req.AddCookie(&http.Cookie{Name: "person", Value: tenant})
		res, err = hc.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther {
			return fmt.Errorf("posting the consent: %s", res.Status)
		}
		go func() {
			if r, err := http.Get(res.Header.Get("Location")); err == nil {
				r.Body.Close()
			}
		}()
		return nil
	}
}

// TestHostedAfterHubLogin: the whole way, as `hub login` leaves it: a
// hosted hub with its real authorization server (engine/authserver, scopes
// "mcp hub") and the inbox behind its bearer middleware; the person signs
// in (hostedlogin, saved in the hub's folder); the app reads the list,
// follows the hub with the sign-in's refreshing client, raises the
// notification of a write that asks there, and its "Allow once" is
// recorded by the hub via desktop by the person's account: the run
// completes, the write made once.
func TestHostedAfterHubLogin(t *testing.T) {
	const tenant = "tn_alice"
	srvURL, ib := hostedWithAuth(t, tenant)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ha := newHostedApp(t, ctx)
	ha.dir = filepath.Join(t.TempDir(), "hub")
	ha.remote.secrets = secret.NewMemory(nil)
	lctx, lcancel := context.WithTimeout(ctx, testenv.Timeout(time.Minute))
	defer lcancel()
	l, err := hostedlogin.SignIn(lctx, hostedlogin.Options{URL: srvURL, Open: consent(tenant)})
	if err != nil {
		t.Fatal(err)
	}
	if err := hostedlogin.Save(lctx, ha.remote.secrets, ha.dir, l); err != nil {
		t.Fatal(err)
	}
	ha.listHosted(ctx)

	a := ib.Tenants[tenant]
	runID, callID := a.Pending(t, `return await up.record({item: "signed in"})`)
	var note uint32
	ha.waitFor(t, "the hosted call's notification", func() bool {
		note = ha.note(srvURL, runID, callID)
		return note != 0
	})
	ha.in(func() { ha.act(note, actionOnce) })
	ha.waitFor(t, "the call settled", func() bool { return ha.note(srvURL, runID, callID) == 0 && len(ha.remote.calls) == 0 })
	ha.records.Wait()
	r := a.Run(t, runID)
	if d := r.PendingItem(callID).Decision; r.Status != model.RunCompleted || d == nil || d.Channel != approval.ChannelDesktop || d.By != tenant {
		t.Errorf("the hosted run is %s, decided %+v; want completed, via desktop by %s", r.Status, d, tenant)
	}
	if n := a.UpstreamCalls(t); n != 1 {
		t.Errorf("the upstream acted %d times, want once", n)
	}
	if s := ha.stderr.String(); s != "" {
		t.Errorf("the app told the person: %s", s)
	}
}

// hostedWithAuth is a hosted hub for the tenants as `hosted serve` mounts
// the inbox: behind a real authorization server (engine/authserver,
// scopes "mcp hub"), whose sign-in page takes the person from a cookie
// (consent). It returns the hub's URL and its tenants' hubs.
func hostedWithAuth(t testing.TB, tenants ...string) (string, *inboxtest.Server) {
	t.Helper()
	ib := inboxtest.New(t, inbox.Options{}, tenants...)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	as, err := authserver.New(authserver.Config{
		Issuer: srv.URL,
		Scopes: []string{"mcp", "hub"},
		Store:  authserver.NewMemory(),
		Person: func(r *http.Request) (string, bool) {
			c, err := r.Cookie("person")
			if err != nil {
				return "", false
			}
			return c.Value, true
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", as.Handler())
	mux.Handle("/mcp", as.RequireScopes(http.NotFoundHandler(), "mcp"))
	in := as.RequireScopes(inbox.New(ib.HubFor, inbox.Options{}), "hub")
	mux.Handle("/api/inbox", in)
	mux.Handle("/api/inbox/", in)
	h = mux
	return srv.URL, ib
}
