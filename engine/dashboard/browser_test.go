package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestApproveInChromium: a person opens the dashboard in headless
// Chromium, signs in through the provider, and approves the pending call
// with a click; the decision is recorded with the channel dashboard and
// the resumed run writes once. No console or page error (a CSP or Trusted
// Types refusal would be one).
func TestApproveInChromium(t *testing.T) {
	node, chromium, pw := requireChromium(t)
	s := newServer(t)
	tenant, th := s.tenant(t, "carol")
	// Another site (localhost is not 127.0.0.1's site) with a link to the
	// dashboard, as in a mail.
	mail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><a id="go" href="%s/">your hub asks</a>`, s.srv.URL)
	}))
	defer mail.Close()
	for _, tt := range []struct {
		name string
		from string
	}{
		{"opened", ""},
		{"from another site's link", strings.Replace(mail.URL, "127.0.0.1", "localhost", 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			approveInChromium(t, s, tenant, th, node, chromium, pw, tt.from)
		})
	}
}

// requireChromium finds node, Chromium (testenv.Chromium: without it the
// test fails when CI=true and is skipped elsewhere) and playwright-core.
func requireChromium(t *testing.T) (node, chromium, playwright string) {
	t.Helper()
	return testenv.Node(t), testenv.Chromium(t), testenv.NPMPath(t, "playwright-core/index.mjs")
}

// clickOnce runs testdata/approve.mjs: Chromium opens dashboard (from
// another site's page when from is set), signs in, clicks once on run's
// call; the answer of the decision's POST.
type clicked struct {
	Status    int             `json:"status"`
	Body      console.Decided `json:"body"`
	Address   string          `json:"address"`
	LinkPages int             `json:"linkPages"`
	URL       string          `json:"url"`
	Errors    []string        `json:"errors"`
}

func clickOnce(t *testing.T, node, chromium, pw, dashboard, run, from string, env ...string) clicked {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	args := []string{filepath.Join("testdata", "approve.mjs"), dashboard, run}
	if from != "" {
		args = append(args, from)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(append(os.Environ(), "BROWSER_EXECUTABLE="+chromium, "PLAYWRIGHT="+pw,
		"BROWSER_TIMEOUT_MS="+strconv.FormatInt(testenv.Timeout(15*time.Second).Milliseconds(), 10)), env...)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("the browser: %v\n%s\n%s", err, out, stderr)
	}
	var got clicked
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("reading the browser's answer %q: %v", out, err)
	}
	t.Logf("signed in at %s (link pages met: %d)", got.URL, got.LinkPages)
	if len(got.Errors) > 0 {
		t.Fatalf("the page logged errors: %q", got.Errors)
	}
	return got
}

func approveInChromium(t *testing.T, s *server, tenant string, th *tenantHub, node, chromium, pw, from string) {
	before := th.upstreamCalls(t)
	runID := th.pending(t, `return await up.record({item: "clicked"})`)
	nextPerson(t, s.idp, "carol")

	got := clickOnce(t, node, chromium, pw, s.srv.URL+"/", runID, from)
	if from != "" && got.LinkPages == 0 {
		t.Fatal("opened from another site's link, the dashboard showed its screens at once; want the link page first")
	}
	if got.Status != 200 || got.Body.Channel != "dashboard" || got.Body.Choice != model.ChoiceOnce || got.Body.Run != runID || got.Address != "up.record" {
		t.Fatalf("the click's decision: %+v", got)
	}
	if len(got.Errors) > 0 {
		t.Fatalf("the page logged errors: %q", got.Errors)
	}
	env, err := th.h.Resume(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunCompleted) || th.upstreamCalls(t) != before+1 {
		t.Fatalf("resumed: %s, the upstream acted %d times; want completed, once", env.Status, th.upstreamCalls(t)-before)
	}
	if d := th.run(t, runID).PendingItem(got.Body.Call).Decision; d == nil || d.Channel != "dashboard" || d.By != tenant {
		t.Fatalf("the recorded decision: %+v", d)
	}
}
