package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// choices are the decisions a call's row shows, by seq % 5: a person's
// four, or none (the policy allowed it).
var choices = []string{"once", "run", "always", "deny", "policy"}

// xssRun stores a failed run of one call per payload of the corpus: the
// call's error message is the payload (even calls) or it succeeded (odd
// ones), the last call is still in flight (its intent journaled, no
// outcome), and calls 1, 2, 3, 4 (mod 5) carry a person's decision. The
// run's code and its error hold the whole corpus.
func xssRun(t *testing.T, st store.Store, base time.Time) string {
	t.Helper()
	ctx := context.Background()
	id := "r" + store.NewID()[:20]
	r := model.Run{
		ID: id, Status: model.RunFailed, Code: strings.Join(xss, "\n"), Attempts: 2,
		CreatedAt: base, UpdatedAt: base.Add(time.Duration(len(xss)+5) * time.Second),
		Error: &model.RunError{Code: "guest_error", Message: strings.Join(xss, "\n")},
	}
	for i := range xss {
		seq := i + 1
		start := base.Add(time.Duration(i) * time.Second)
		if c := choices[seq%5]; c != "policy" {
			r.Pending = append(r.Pending, model.Pending{
				ID: fmt.Sprintf("c%d", seq), Kind: model.PendingApproval, Seq: seq, Address: fmt.Sprintf("s%d.t", i),
				Decision: &model.Decision{Choice: model.Choice(c), Channel: "approval-page", At: start.Add(-300 * time.Millisecond)},
			})
		}
		je := model.JournalEntry{Seq: seq, Address: fmt.Sprintf("s%d.t", i), ArgsDigest: "d", OK: i%2 == 1, Millis: int64(100 * (i%4 + 1)), At: start.Add(time.Duration(100*(i%4+1)) * time.Millisecond)}
		if i%2 == 0 {
			je.Error = &model.ToolError{Code: "upstream_error", Message: xss[i]}
		}
		je.Repeated = i == 1 // a read made again after an interrupted attempt
		if i == len(xss)-1 {
			je = model.JournalEntry{Seq: seq, Address: je.Address, ArgsDigest: "d", At: start, Intent: true}
		}
		line, err := json.Marshal(je)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, store.Runs, id, line); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Put(ctx, store.Runs, id, r); err != nil {
		t.Fatal(err)
	}
	return id
}

// rendered is what testdata/render_screens.mjs prints.
type rendered struct {
	Review, Runs, Run, Sources, Imports string
	Tags, Attrs                         []string
	Refused                             []string
	Testids                             []struct {
		Testid, Tag, Text string
		Attrs             map[string]string
	}
}

func (r *rendered) byTestid(id string) []map[string]string {
	var out []map[string]string
	for _, e := range r.Testids {
		if e.Testid == id {
			m := map[string]string{"text": e.Text}
			for k, v := range e.Attrs {
				m[k] = v
			}
			out = append(out, m)
		}
	}
	return out
}

// TestScreensKeepDataAsText renders the Review, Runs and Sources screens in
// Node over a DOM whose HTML sinks throw, from what the API answers over a
// hub holding the corpus: tool descriptions and contract diffs, stdio
// commands, removed tools, server names and a source's last error, a run's
// code, its error and its calls' errors. Every payload comes out as text,
// in full, where the screen shows it; only the screens' own elements and
// attributes are built (SVG: svg, rect, line, title); the review groups are
// hub review's three; and each call's bar sits on the run's time axis from
// its start to its end.
func TestScreensKeepDataAsText(t *testing.T) {
	t.Parallel()
	h, _ := xssHub(t)
	ctx := context.Background()
	st := h.Store()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	runID := xssRun(t, st, base)
	// Even sources failed their last check with a payload as the error.
	for i, x := range xss {
		if i%2 != 0 {
			continue
		}
		ns := fmt.Sprintf("s%d", i)
		var m hub.Manifest
		if err := st.Get(ctx, store.Manifests, ns, &m); err != nil {
			t.Fatal(err)
		}
		m.Health, m.LastError = "error", x
		if err := st.Put(ctx, store.Manifests, ns, m); err != nil {
			t.Fatal(err)
		}
	}
	c := console.New(h, console.Options{})
	var in struct {
		Inbox   console.Inbox     `json:"inbox"`
		Runs    console.Runs      `json:"runs"`
		Run     console.RunDetail `json:"run"`
		Sources console.Sources   `json:"sources"`
		Imports console.Imports   `json:"imports"`
	}
	for path, v := range map[string]any{"/api/review": &in.Inbox, "/api/runs": &in.Runs, "/api/runs/" + runID: &in.Run, "/api/sources": &in.Sources} {
		if err := json.Unmarshal(newRecorderGet(t, c, path), v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	if len(in.Inbox.Items) != len(xss) || len(in.Run.Calls) != len(xss) || len(in.Sources.Sources) != len(xss) {
		t.Fatalf("the API gave %d review items, %d calls, %d sources; want %d each", len(in.Inbox.Items), len(in.Run.Calls), len(in.Sources.Sources), len(xss))
	}
	// The corpus's tools are all unannotated (destructive), new and never
	// reviewed: spread them over the three groups, make some changed with
	// a diff, and add removed tools and commands, as the API shapes them.
	effects := []model.Effect{model.EffectRead, model.EffectWrite, model.EffectDestructive}
	payloadOf := map[string]string{}
	for i := range in.Inbox.Items {
		it := &in.Inbox.Items[i]
		payloadOf[it.Address] = it.Description
		it.Effect = effects[i%3]
		if i%2 == 1 {
			it.Status = "changed"
			it.Changes = []string{"description:\n  - the reviewed one\n  + " + it.Description}
		}
	}
	for i, x := range xss {
		in.Inbox.Removed = append(in.Inbox.Removed, hub.RemovedTool{Address: fmt.Sprintf("gone%d.t", i), Contract: "c", Description: x})
		in.Inbox.Commands = append(in.Inbox.Commands, hub.CommandConsent{Namespace: fmt.Sprintf("s%d", i), Command: x})
	}
	// Skills in the agents' folders: a payload as the description of one
	// to import and as the error of a clash.
	for i, x := range xss {
		in.Imports.Skills = append(in.Imports.Skills,
			console.ImportSkill{Name: fmt.Sprintf("skill-%d", i), Description: x, Harness: "claude-code", Path: "/h/.claude/skills/x", Status: "import"},
			console.ImportSkill{Name: fmt.Sprintf("other-%d", i), Harness: "codex", Path: "/h/.codex/skills/x", Status: "clash", Error: x})
	}
	input := filepath.Join(t.TempDir(), "input.json")
	b, _ := json.Marshal(in)
	if err := os.WriteFile(input, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got := renderScreens(t, input)

	// Review: each tool in its group, its description (and diff) as text.
	for _, g := range []struct {
		testid string
		effect model.Effect
	}{{"review-group-read", model.EffectRead}, {"review-group-write", model.EffectWrite}, {"review-group-destructive", model.EffectDestructive}} {
		var want int
		for _, it := range in.Inbox.Items {
			if it.Effect == g.effect {
				want++
			}
		}
		if n := len(got.byTestid(g.testid)); n != 1 {
			t.Errorf("%d sections %s, want 1", n, g.testid)
		}
		if !strings.Contains(got.Review, fmt.Sprintf("· %d", want)) {
			t.Errorf("the %s group does not say it holds %d tools", g.effect, want)
		}
	}
	items := got.byTestid("review-item")
	if len(items) != len(xss) {
		t.Fatalf("the Review screen shows %d tools, want %d", len(items), len(xss))
	}
	for _, it := range items {
		x := payloadOf[it["data-address"]]
		if x == "" || !strings.Contains(it["text"], x) {
			t.Errorf("review item %q does not show its description %q as text: %q", it["data-address"], x, it["text"])
		}
	}
	changes := got.byTestid("review-changes")
	if len(changes) != len(xss)/2 {
		t.Errorf("%d contract diffs shown, want %d", len(changes), len(xss)/2)
	}
	for _, it := range in.Inbox.Items {
		if it.Status == "changed" && !slices.ContainsFunc(changes, func(m map[string]string) bool { return strings.Contains(m["text"], "+ "+it.Description) }) {
			t.Errorf("no contract diff shows %q as text", it.Description)
		}
	}
	for _, part := range []struct{ testid, what string }{{"review-removed-item", "removed tool"}, {"review-command", "command"}} {
		shown := got.byTestid(part.testid)
		if len(shown) != len(xss) {
			t.Errorf("%d %ss shown, want %d", len(shown), part.what, len(xss))
		}
		for i, s := range shown {
			if !strings.Contains(s["text"], xss[i]) {
				t.Errorf("%s %d does not show %q as text: %q", part.what, i, xss[i], s["text"])
			}
		}
	}

	// Runs: the list, the run's error and code, and a row per call with
	// its error as text and its bar on the axis.
	if !strings.Contains(got.Runs, runID) || len(got.byTestid("run-row")) != len(in.Runs.Runs) {
		t.Errorf("the run list shows %d runs, want %d with %s: %q", len(got.byTestid("run-row")), len(in.Runs.Runs), runID, got.Runs)
	}
	for _, x := range xss {
		if n := strings.Count(got.Run, x); n < 2 {
			t.Errorf("the run shows %q %d times as text, want at least 2 (code, run error)", x, n)
		}
	}
	rows := got.byTestid("timeline-call")
	bars := got.byTestid("timeline-bar")
	if len(rows) != len(xss) || len(bars) != len(xss) {
		t.Fatalf("the timeline has %d rows and %d bars, want %d", len(rows), len(bars), len(xss))
	}
	// The axis: from the earliest start or decision to the latest end.
	t0, t1 := math.Inf(1), math.Inf(-1)
	for _, cl := range in.Run.Calls {
		s := float64(cl.At.UnixMilli() - cl.Ms)
		t0, t1 = math.Min(t0, s), math.Max(t1, float64(cl.At.UnixMilli()))
		if cl.Decision != nil {
			t0 = math.Min(t0, float64(cl.Decision.At.UnixMilli()))
		}
	}
	t1 = math.Max(t1, float64(in.Run.Run.UpdatedAt.UnixMilli())) // a call in flight runs to the run's last change
	var outcomes, decisions []string
	for i, row := range rows {
		cl := in.Run.Calls[i]
		if row["data-seq"] != strconv.Itoa(cl.Seq) {
			t.Fatalf("row %d is call %s, want %d (calls in order)", i, row["data-seq"], cl.Seq)
		}
		outcomes = append(outcomes, row["data-outcome"])
		decisions = append(decisions, row["data-decision"])
		if cl.Error != nil && !strings.Contains(row["text"], cl.Error.Message) {
			t.Errorf("call %d does not show its error %q as text: %q", cl.Seq, cl.Error.Message, row["text"])
		}
		if note := "read repeated after an interrupted attempt"; strings.Contains(row["text"], note) != (i == 1) || cl.Repeated != (i == 1) {
			t.Errorf("call %d shows the note %q: %v (repeated %v), want it on call 2 alone", cl.Seq, note, strings.Contains(row["text"], note), cl.Repeated)
		}
		x, _ := strconv.ParseFloat(bars[i]["x"], 64)
		w, _ := strconv.ParseFloat(bars[i]["width"], 64)
		start := float64(cl.At.UnixMilli() - cl.Ms)
		end := float64(cl.At.UnixMilli())
		if cl.InFlight {
			start, end = float64(cl.At.UnixMilli()), t1
		}
		wantX, wantW := (start-t0)/(t1-t0)*1000, math.Max(4, (end-start)/(t1-t0)*1000)
		if math.Abs(x-wantX) > 0.11 || math.Abs(w-wantW) > 0.11 {
			t.Errorf("call %d's bar is x=%v width=%v, want x=%.1f width=%.1f (from its start to its end on the run's axis)", cl.Seq, x, w, wantX, wantW)
		}
	}
	var wantOutcomes, wantDecisions []string
	for i := range xss {
		o := "error"
		if i%2 == 1 {
			o = "ok"
		}
		if i == len(xss)-1 {
			o = "in-flight"
		}
		wantOutcomes = append(wantOutcomes, o)
		wantDecisions = append(wantDecisions, choices[(i+1)%5])
	}
	if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantDecisions, decisions); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}

	// Sources: the server names and last errors as text.
	srcs := got.byTestid("source")
	if len(srcs) != len(xss) {
		t.Fatalf("the Sources screen shows %d sources, want %d", len(srcs), len(xss))
	}
	for _, s := range in.Sources.Sources {
		i := slices.IndexFunc(srcs, func(m map[string]string) bool { return m["data-namespace"] == s.Namespace })
		if i < 0 {
			t.Errorf("source %s is not shown", s.Namespace)
			continue
		}
		if !strings.Contains(srcs[i]["text"], s.ServerName) || !strings.Contains(srcs[i]["text"], s.LastError) {
			t.Errorf("source %s does not show its server name %q and last error %q as text: %q", s.Namespace, s.ServerName, s.LastError, srcs[i]["text"])
		}
		if srcs[i]["data-health"] != s.Health {
			t.Errorf("source %s shows health %q, want %q", s.Namespace, srcs[i]["data-health"], s.Health)
		}
	}
	if n := len(got.byTestid("source-error")); n != (len(xss)+1)/2 {
		t.Errorf("%d sources show a last error, want %d", n, (len(xss)+1)/2)
	}

	// The skills to import: each description, and each clash's error, as text.
	if n := len(got.byTestid("import-skill")); n != len(xss) {
		t.Errorf("the import part shows %d skills to import, want %d", n, len(xss))
	}
	for _, x := range xss {
		if strings.Count(got.Imports, x) < 2 {
			t.Errorf("the import part does not show %q as text twice (a description and an error):\n%s", x, got.Imports)
		}
	}

	wantTags := []string{"ARTICLE", "BUTTON", "CODE", "DD", "DETAILS", "DIV", "DL", "DT", "FIGCAPTION", "FIGURE", "H3", "H4", "HEADER", "INPUT", "KBD", "LABEL", "LI", "OL", "OPTION", "P", "PRE", "SECTION", "SELECT", "SPAN", "SUMMARY", "UL", "svg:line", "svg:rect", "svg:svg", "svg:title"}
	for _, tag := range got.Tags {
		if !slices.Contains(wantTags, tag) {
			t.Errorf("the screens built a <%s> element", tag)
		}
	}
	wantAttrs := []string{"aria-current", "aria-describedby", "aria-hidden", "aria-keyshortcuts", "aria-label", "class", "data-address", "data-decision", "data-health", "data-namespace", "data-outcome", "data-run", "data-seq", "data-skill", "data-status", "data-testid", "disabled", "for", "height", "id", "open", "preserveAspectRatio", "role", "rx", "selected", "tabindex", "type", "value", "viewBox", "width", "x", "x1", "x2", "y", "y1", "y2"}
	for _, a := range got.Attrs {
		if !slices.Contains(wantAttrs, a) {
			t.Errorf("the screens set the attribute %q", a)
		}
	}
	// dom.js refuses what could run or load something.
	if diff := cmp.Diff([]string{`h a href`, `h a onclick`, `svg foreignObject`, `svg image`, `svg rect onload`, `svg rect style`, `svg script`, `svg use`}, got.Refused); diff != "" {
		t.Errorf("dom.js refusals (-want +got):\n%s", diff)
	}
}

// renderScreens runs testdata/render_screens.mjs over an input file.
func renderScreens(t *testing.T, input string) *rendered {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(60*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.Node(t), filepath.Join("testdata", "render_screens.mjs"), filepath.Join(testenv.Root(t), "frontend"), input)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("rendering: %v\n%s", err, stderr)
	}
	var got rendered
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &got
}

// TestReviewAcceptsWhatIsShown: the request the Review screen makes on a
// (frontend/api.js acceptReview, run in Node) names every tool at the
// contract shown, with the person's rule where it differs from the
// proposal, and carries the session's CSRF token. When a tool changed after
// the inbox was shown the hub refuses it (409) and accepts nothing; the
// same request built from the inbox read again is accepted, rules and all.
func TestReviewAcceptsWhatIsShown(t *testing.T) {
	t.Parallel()
	h, _ := xssHub(t)
	ctx := context.Background()
	p := newPage(t, console.New(h, console.Options{}), console.GuardOptions{})
	_, cookie, csrf := p.login()
	inbox := func() console.Inbox {
		t.Helper()
		w := p.send(request{method: http.MethodGet, target: "/api/review", cookie: cookie})
		var in console.Inbox
		if err := json.Unmarshal(w.Body.Bytes(), &in); err != nil || w.Code != http.StatusOK {
			t.Fatalf("GET /api/review: %d %v %s", w.Code, err, w.Body)
		}
		return in
	}
	actions := map[string]string{"s1.t": "deny", "s2.t": "allow", "s3.t": "ask"} // s3.t's proposal is ask already
	accept := func(shown console.Inbox) *httptest.ResponseRecorder {
		t.Helper()
		dir := t.TempDir()
		b, _ := json.Marshal(shown)
		a, _ := json.Marshal(actions)
		if err := os.WriteFile(filepath.Join(dir, "inbox.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "actions.json"), a, 0o600); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, testenv.Timeout(60*time.Second))
		defer cancel()
		out, err := exec.CommandContext(cctx, testenv.Node(t), filepath.Join("testdata", "accept_body.mjs"), filepath.Join(testenv.Root(t), "frontend"), filepath.Join(dir, "inbox.json"), filepath.Join(dir, "actions.json")).Output()
		if err != nil {
			t.Fatalf("building the acceptance: %v", err)
		}
		var sent struct {
			URL, Method string
			Headers     map[string]string
			Body        console.Acceptance
		}
		if err := json.Unmarshal(out, &sent); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if sent.URL != "/api/review" || sent.Method != http.MethodPost || sent.Headers["X-CSRF-Token"] != "csrf-token" || sent.Headers["Content-Type"] != "application/json" {
			t.Fatalf("the screen sends %s %s with headers %v", sent.Method, sent.URL, sent.Headers)
		}
		var want, got []string
		for _, it := range shown.Items {
			a := actions[it.Address]
			if a == string(it.Proposal) {
				a = ""
			}
			want = append(want, it.Address+"@"+it.Contract+":"+a)
		}
		for _, it := range sent.Body.Items {
			got = append(got, it.Address+"@"+it.Contract+":"+string(it.Action))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("the acceptance names (-shown +sent):\n%s", diff)
		}
		return p.send(request{method: http.MethodPost, target: "/api/review", body: sent.Body, cookie: cookie, csrf: csrf, origin: "http://" + guardAddr, fetchSite: "same-origin"})
	}

	shown := inbox()
	if len(shown.Items) != len(xss) {
		t.Fatalf("the inbox shows %d tools, want %d", len(shown.Items), len(xss))
	}
	// s4.t changes after the inbox was shown.
	var m hub.Manifest
	if err := h.Store().Get(ctx, store.Manifests, "s4", &m); err != nil {
		t.Fatal(err)
	}
	m.Tools = model.NewTools("s4", []model.UpstreamTool{{Name: "t", Description: "Now it deletes everything."}})
	if err := h.Store().Put(ctx, store.Manifests, "s4", m); err != nil {
		t.Fatal(err)
	}
	if w := accept(shown); w.Code != http.StatusConflict {
		t.Fatalf("accepting a stale inbox: %d %s, want 409", w.Code, w.Body)
	}
	if n := len(inbox().Items); n != len(xss) {
		t.Fatalf("after the refusal %d tools await review, want all %d (nothing accepted)", n, len(xss))
	}
	again := inbox()
	w := accept(again)
	if w.Code != http.StatusOK {
		t.Fatalf("accepting the inbox read again: %d %s", w.Code, w.Body)
	}
	var acc console.Accepted
	if err := json.Unmarshal(w.Body.Bytes(), &acc); err != nil || acc.Accepted != len(xss) {
		t.Fatalf("accepted %+v (%v), want %d tools", acc, err, len(xss))
	}
	if n := len(inbox().Items); n != 0 {
		t.Errorf("%d tools still await review", n)
	}
	pol, err := h.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range again.Items {
		if pol.Reviewed[it.Address] != it.Contract {
			t.Errorf("%s reviewed at %q, want the contract shown %q", it.Address, pol.Reviewed[it.Address], it.Contract)
		}
	}
	rules := map[string]string{}
	for _, r := range pol.Rules {
		if _, ok := actions[r.Target]; ok {
			rules[r.Target] = string(r.Action)
		}
	}
	if rules["s1.t"] != "deny" || rules["s2.t"] != "allow" {
		t.Errorf("rules made for the person's choices: %v, want s1.t deny and s2.t allow", rules)
	}
}
