package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/dashboard"
	"github.com/capabilities-sh/capabilities/engine/hosted"
	"github.com/capabilities-sh/capabilities/engine/hosted/hostedtest"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/identity"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestInTheHostedHub mounts the dashboard in the real hosted server
// (engine/hosted over PostgreSQL, each tenant a view of one database; the
// sign-in's sessions in PostgreSQL; https with the test server's
// certificate, so the cookies are __Host- and Secure): a tenant's run
// writes to a remote MCP server (server-everything over streamable HTTP)
// and waits; the person signs in, decides in the dashboard, and the hosted
// hub finishes the run by itself (no agent resumes it): the write is made
// once. A second tenant, signed in, reads and decides nothing of it. Then
// the same with a click in headless Chromium.
func TestInTheHostedHub(t *testing.T) {
	ctx := context.Background()
	everything := testenv.EverythingHTTP(t)
	var dashErr error
	he := hostedtest.Start(t, hostedtest.Options{Allow: []string{"127.0.0.1/32"},
		Config: func(cfg *hosted.Config, e *hostedtest.Env) {
			cfg.Dashboard = func(hubs hosted.HubFunc) http.Handler {
				d, err := dashboard.New(dashboard.Config{RP: e.RP, PublicURL: e.URL, Hub: hubs})
				if err != nil {
					dashErr = err
					return http.NotFoundHandler()
				}
				return d
			}
		}})
	if dashErr != nil {
		t.Fatal(dashErr)
	}
	p, ts, srv := he.IDP, he.TS, he.Server

	// Alice's hub: server-everything, reviewed; a run that writes waits.
	alice := identity.TenantID(p.Issuer, "alice")
	hctx, release := context.WithCancel(ctx)
	defer release()
	ah, err := srv.Hub(hctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	prop, err := ah.Propose(ctx, hub.AddRequest{Namespace: "everything", URL: everything})
	if err != nil {
		t.Fatalf("adding server-everything: %v", err)
	}
	if err := ah.Accept(ctx, prop); err != nil {
		t.Fatal(err)
	}
	rev, err := ah.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := ah.AcceptReview(ctx, rev, nil, "test"); err != nil {
		t.Fatal(err)
	}
	write := "everything." + model.ToolIdent("toggle-simulated-logging")
	env, err := ah.Execute(ctx, "return await "+write+"({})")
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) != 1 {
		t.Fatalf("the write did not wait: %s %+v", env.Status, env.Pending)
	}
	runID := env.RunID

	signIn := func(sub string) (*http.Client, string) {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Transport: ts.Client().Transport, Timeout: testenv.Timeout(30 * time.Second)}
		nextPerson(t, p, sub)
		resp, err := c.Get(ts.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(page), "/app.js") {
			t.Fatalf("signing in as %s through the hosted hub: %s at %s", sub, resp.Status, resp.Request.URL)
		}
		var s console.Session
		if code := getJSON(t, c, ts.URL+"/api/session", &s); code != 200 || s.CSRF == "" {
			t.Fatalf("the session: %d %+v", code, s)
		}
		return c, s.CSRF
	}
	post := func(c *http.Client, csrf, path string, body any) (int, []byte) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", ts.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set(console.CSRFHeader, csrf)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}

	// Bob, signed in, aims at alice's run: unknown to him.
	bob, bobCSRF := signIn("bob")
	var bq console.Approvals
	if code := getJSON(t, bob, ts.URL+"/api/approvals", &bq); code != 200 || len(bq.Approvals) != 0 {
		t.Fatalf("bob's queue: %d %+v; want empty", code, bq.Approvals)
	}
	if code := getJSON(t, bob, ts.URL+"/api/runs/"+runID, &struct{}{}); code != http.StatusNotFound {
		t.Fatalf("bob reading alice's run: %d; want 404", code)
	}
	if code, data := post(bob, bobCSRF, "/api/approvals/"+runID+"/"+env.Pending[0].ID, console.Decision{Choice: model.ChoiceOnce}); code != http.StatusNotFound {
		t.Fatalf("bob deciding alice's call: %d %s; want 404", code, data)
	}

	ac, csrf := signIn("alice")
	// The Review screen asks what the agents' folders would import: on the
	// hosted hub nothing, though a hub over PostgreSQL keeps no skills
	// folder (which the console answers 500).
	var im console.Imports
	if code := getJSON(t, ac, ts.URL+"/api/import", &im); code != 200 || im.Skills == nil || len(im.Skills) != 0 {
		t.Fatalf("GET /api/import on a hub in PostgreSQL: %d %+v; want 200 and an empty list", code, im)
	}
	var aq console.Approvals
	if code := getJSON(t, ac, ts.URL+"/api/approvals", &aq); code != 200 || len(aq.Approvals) != 1 || aq.Approvals[0].Run != runID || aq.Approvals[0].Address != write {
		t.Fatalf("alice's queue: %+v", aq.Approvals)
	}
	call := aq.Approvals[0].ID
	if code, data := post(ac, csrf, "/api/approvals/"+runID+"/"+call, console.Decision{Choice: model.ChoiceOnce}); code != 200 {
		t.Fatalf("deciding: %d %s", code, data)
	}

	// The hosted hub finishes the decided run by itself.
	eng, err := ah.Runs()
	if err != nil {
		t.Fatal(err)
	}
	finished := func(t *testing.T, runID, call string) {
		t.Helper()
		deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
		var r *model.Run
		for {
			r, err = eng.Get(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Done() || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if r.Status != model.RunCompleted {
			t.Fatalf("the decided run: %s; want completed by the hosted hub", r.Status)
		}
		if d := r.PendingItem(call).Decision; d == nil || d.Channel != "dashboard" || d.By != alice {
			t.Fatalf("the recorded decision: %+v", d)
		}
		journal, err := eng.Journal(ctx, runID)
		if err != nil {
			t.Fatal(err)
		}
		made := 0
		for _, je := range journal {
			if je.Address == write && !je.Intent {
				made++
			}
		}
		if made != 1 {
			t.Fatalf("the write was made %d times; want once:\n%+v", made, journal)
		}
	}
	finished(t, runID, call)

	// The same with a click in Chromium, over https with the __Host-
	// cookies of the real server.
	t.Run("in Chromium", func(t *testing.T) {
		node, chromium, pw := requireChromium(t)
		env, err := ah.Execute(ctx, "return await "+write+"({})")
		if err != nil {
			t.Fatal(err)
		}
		if env.Status != string(model.RunAwaitingApproval) || len(env.Pending) != 1 {
			t.Fatalf("the write did not wait: %s %+v", env.Status, env.Pending)
		}
		nextPerson(t, p, "alice")
		got := clickOnce(t, node, chromium, pw, ts.URL+"/", env.RunID, "", "IGNORE_HTTPS_ERRORS=1")
		if got.Status != 200 || got.Body.Channel != "dashboard" || got.Body.Run != env.RunID || got.Address != write {
			t.Fatalf("the click's decision: %+v", got)
		}
		finished(t, env.RunID, got.Body.Call)
	})
}

func getJSON(t *testing.T, c *http.Client, u string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if testing.Verbose() && resp.StatusCode != 200 {
		t.Logf("GET %s: %d %s", u, resp.StatusCode, data)
	}
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("GET %s: %v in %s", u, err, data)
		}
	}
	return resp.StatusCode
}
