package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"log/slog"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestApprovalPageDecidesAndTheAgentResumes is the page's journey over a
// real hub and upstream: a run reads, then asks to write; the person opens
// the one-time link, reads the pending call, decides once; the page says
// the agent continues with resume; the resumed run makes the write exactly
// once, and the decision is recorded with the channel approval-page. The
// model never sees the link, its token or the session (I1-style: nothing
// of them in the envelope, the journal, the run record, the hub's logs or
// any file of the hub).
func TestApprovalPageDecidesAndTheAgentResumes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	runID := f.pending(t, `const e = await up.echo({message: "before"}); return await up.record({item: "from the page"})`)
	if n := f.upstreamCalls(t); n != 1 {
		t.Fatalf("before the decision the upstream acted %d times, want 1 (the read)", n)
	}
	consoleLogs := &testenv.Buffer{}
	h := console.New(f.h, console.Options{Logger: slog.New(slog.NewTextHandler(consoleLogs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	g, link := serve(t, h, console.GuardOptions{})
	b := newBrowser(t, g.Origin())
	b.login(link)

	// The page and its modules are served.
	code, page := b.do(http.MethodGet, "/", nil)
	if code != http.StatusOK || !strings.Contains(string(page), `<script type="module" src="/app.js">`) {
		t.Fatalf("GET /: %d %s", code, page)
	}

	var list console.Approvals
	b.get("/api/approvals", &list)
	want := []console.Approval{{
		Run: runID, ID: "c2", Kind: model.PendingApproval, Address: "up.record", Connection: "default",
		Summary: "Record an item (a write).", Effect: model.EffectWrite,
		Args: json.RawMessage(`{"item":"from the page"}`), Choices: model.Choices,
	}}
	if diff := cmp.Diff(want, list.Approvals, cmpopts.IgnoreFields(console.Approval{}, "Reason", "Message", "ExpiresAt")); diff != "" {
		t.Fatalf("pending approvals (-want +got):\n%s", diff)
	}
	if a := list.Approvals[0]; a.Message == "" || a.ExpiresAt.Before(time.Now()) {
		t.Fatalf("the pending call does not say why it asks or when it expires: %+v", a)
	}

	code, data := b.do(http.MethodPost, "/api/approvals/"+runID+"/c2", console.Decision{Choice: model.ChoiceOnce})
	if code != http.StatusOK {
		t.Fatalf("deciding: %d %s", code, data)
	}
	var d console.Decided
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Channel != approval.ChannelPage || d.Choice != model.ChoiceOnce || d.Waiting != 0 ||
		!strings.Contains(d.Next, "resume") || !strings.Contains(d.Next, runID) {
		t.Fatalf("the decision's answer: %+v; want the channel approval-page and what happens next (resume %s)", d, runID)
	}
	// Deciding is all the page does: the agent's resume makes the call.
	if n := f.upstreamCalls(t); n != 1 {
		t.Fatalf("the decision itself made a call: the upstream acted %d times", n)
	}
	code, data = b.do(http.MethodPost, "/api/approvals/"+runID+"/c2", console.Decision{Choice: model.ChoiceDeny})
	if code != http.StatusConflict {
		t.Fatalf("a second decision on the same call: %d %s; want 409", code, data)
	}

	env, err := f.h.Resume(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunCompleted) {
		t.Fatalf("resumed run: %s %+v", env.Status, env.Error)
	}
	if n := f.upstreamCalls(t); n != 2 {
		t.Fatalf("after the resume the upstream acted %d times, want 2 (the read, then the write once)", n)
	}
	r := f.run(t, runID)
	if p := r.PendingItem("c2"); p == nil || p.Decision == nil || p.Decision.Channel != approval.ChannelPage || p.Decision.Choice != model.ChoiceOnce {
		t.Fatalf("the run record's decision: %+v", r.Pending)
	}

	// The page's view of the run: each call with its decision and time.
	var detail console.RunDetail
	b.get("/api/runs/"+runID, &detail)
	var got []string
	for _, c := range detail.Calls {
		s := c.Address
		if c.OK {
			s += " ok"
		}
		if c.Decision != nil {
			s += " " + string(c.Decision.Choice) + " via " + c.Decision.Channel
		}
		got = append(got, s)
	}
	if diff := cmp.Diff([]string{"up.echo ok", "up.record ok once via approval-page"}, got); diff != "" {
		t.Fatalf("the run's calls (-want +got):\n%s", diff)
	}
	if detail.Envelope == nil || detail.Envelope.Status != string(model.RunCompleted) || detail.Run.Status != string(model.RunCompleted) {
		t.Fatalf("the run's detail: %+v", detail.Run)
	}
	var runs console.Runs
	b.get("/api/runs", &runs)
	if len(runs.Runs) != 1 || runs.Runs[0].ID != runID {
		t.Fatalf("runs: %+v", runs.Runs)
	}

	// I1-style: the link, its token, the origin and the session never reach
	// what the model reads.
	u, _ := url.Parse(link)
	token := u.Query().Get(console.TokenParam)
	secrets := map[string]string{"the link": link, "the token": token, "the CSRF token": b.csrf, "the page's address": u.Host}
	for _, c := range b.c.Jar.Cookies(u) {
		secrets["the session cookie"] = c.Value
	}
	if len(secrets) != 5 || token == "" {
		t.Fatalf("the browser holds no session cookie or the link no token: %v", secrets)
	}
	envJSON, _ := json.Marshal(env)
	where := map[string]string{"the envelope": string(envJSON), "the hub's log": f.logs.String(), "the console's log": consoleLogs.String()}
	err = testenv.ReadFiles(f.st.Dir(), func(p string, data []byte) { where[p] = string(data) })
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range secrets {
		for w, text := range where {
			if strings.Contains(text, s) {
				t.Errorf("%s reached %s", name, w)
			}
		}
	}
}

// TestApprovalWholeArguments: a pending call whose arguments the preview
// shortened says how long they are, and the page reads them whole, with
// the guard's session; a call whose preview shows them all has nothing
// more to read (404), nor has a run this page is not about (403).
func TestApprovalWholeArguments(t *testing.T) {
	f := newFixture(t)
	long := "head " + strings.Repeat("x", 6000) + " MIDDLE " + strings.Repeat("y", 6000) + " tail"
	longRun := f.pending(t, fmt.Sprintf(`return await up.record({item: %q})`, long))
	shortRun := f.pending(t, `return await up.record({item: "short"})`)
	g, link := serve(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	b := newBrowser(t, g.Origin())
	b.login(link)
	var list console.Approvals
	b.get("/api/approvals", &list)
	sizes := map[string]int{}
	for _, a := range list.Approvals {
		sizes[a.Run] = a.ArgsSize
		if a.Run == longRun && (strings.Contains(string(a.Args), "MIDDLE") || len(a.Args) > console.MaxArgsBytes) {
			t.Errorf("the preview of the long call holds its middle or is over %d bytes: %d", console.MaxArgsBytes, len(a.Args))
		}
	}
	if want := len(`{"item":""}`) + len(long); sizes[longRun] != want || sizes[shortRun] != 0 {
		t.Fatalf("argsSize: long %d (want %d), short %d (want 0)", sizes[longRun], want, sizes[shortRun])
	}
	var all console.FullArgs
	b.get("/api/approvals/"+longRun+"/c1/args", &all)
	var got struct{ Item string }
	if err := json.Unmarshal(all.Args, &got); err != nil || got.Item != long {
		t.Fatalf("the whole arguments: %v, %d bytes of item", err, len(got.Item))
	}
	if code, body := b.do(http.MethodGet, "/api/approvals/"+shortRun+"/c1/args", nil); code != http.StatusNotFound || !strings.Contains(string(body), "its preview shows them all") {
		t.Errorf("the short call's whole arguments: %d %s; want 404 saying the preview shows them all", code, body)
	}

	one, oneLink := serve(t, console.New(f.h, console.Options{Run: shortRun}), console.GuardOptions{})
	b1 := newBrowser(t, one.Origin())
	b1.login(oneLink)
	if code, _ := b1.do(http.MethodGet, "/api/approvals/"+longRun+"/c1/args", nil); code != http.StatusForbidden {
		t.Errorf("a page about one run read another run's arguments: %d, want 403", code)
	}
}
