package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestConsoleInABrowser drives the console's Approval screen in a real
// headless Chromium (Debian's chromium-headless-shell, through playwright-core
// from testdata/npm; testdata/browser/driver.mjs). `capabilities hub
// console` opens its one-time link with CAPABILITIES_BROWSER, a script that
// hands the link to the test; the test opens it in the browser. Pending
// calls come from `capabilities hub exec` on a write to a scripted upstream
// that logs every call it acts on, so each decision's effect is counted after
// `hub exec --resume`:
//
//   - four runs, each decided with another button: once (the write happens
//     once, and the run's next write asks again), run (every write of the run,
//     asked once), always (a rule is stored; the next run does not ask), deny
//     (no write; the code catches approval_denied);
//   - keyboard only: o, then Enter (the focused once), then Tab to deny and Enter;
//   - a queue of three pending calls, decided in order, each next call
//     showing what the last decision did;
//   - over stdio: an MCP client without elicitation runs serve --stdio; the
//     write pauses, serve hands the page's link to CAPABILITIES_BROWSER, the
//     person decides in a new tab, the client resumes: the write once, the
//     envelope's decisions say approval-page, and no link in the envelope;
//   - review accept: a source's tools change upstream; the Review screen
//     shows them changed with the diff; accept reviews them again and the
//     read-only echo no longer asks;
//   - the Runs screen's timeline of a finished run (a bar per call), and
//     the Sources screen;
//   - screenshots of each screen at 1280×800 and 390×844, light and dark,
//     under $CAPABILITIES_ARTIFACTS/console (else a temporary directory);
//   - no console or page error (a CSP or Trusted Types refusal is one).
//
// It logs the page's first contentful paint and, for each decision, the
// time from the click or key to the POST's answer, which the console sends
// after the run record is written (BENCHMARKS.md; never asserted).
func TestConsoleInABrowser(t *testing.T) {
	chromium, pw := requireBrowser(t)
	node := testenv.Node(t)
	root := testenv.Root(t)
	scripted := filepath.Join(root, "testdata", "upstreams", "scripted.mjs")
	work := t.TempDir()
	shots := t.TempDir()
	if dir := os.Getenv("CAPABILITIES_ARTIFACTS"); dir != "" {
		shots = filepath.Join(dir, "console")
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := newBrowserHub(t, work)
	writes := filepath.Join(work, "writer-calls.jsonl")
	keeps := filepath.Join(work, "keeper-calls.jsonl")
	h.run("hub", "init")
	h.run("hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_CALLS="+writes, "--env", "SCRIPTED_TOOLS=4", "--", node, scripted)
	// A second source for "always", so its rule does not decide the other journeys.
	h.run("hub", "add", "--yes", "--namespace", "keeper", "--env", "SCRIPTED_CALLS="+keeps, "--env", "SCRIPTED_TOOLS=4", "--", node, scripted)

	link := h.console()
	p := startDriver(t, node, chromium, pw)
	var opened struct {
		Status int
		URL    string
		Paints map[string]float64
	}
	p.do(map[string]any{"op": "open", "url": link}, &opened)
	if opened.Status != 200 || strings.Contains(opened.URL, "token") {
		t.Fatalf("opening the link: status %d at %s; want the page, without the token in the address", opened.Status, opened.URL)
	}
	paints := []float64{opened.Paints["first-contentful-paint"]}

	var decisions []float64 // ms from the click or key to the decision's answer
	decide := func(run, address, choice string, keys ...string) pageDecided {
		t.Helper()
		d := p.dialog(run, "")
		if d.Address != address {
			t.Fatalf("the dialog shows %q, want %q (%+v)", d.Address, address, d)
		}
		got := p.choose(choice, keys...)
		if got.Status != 200 || got.Body.Run != run || got.Body.Channel != "approval-page" || !strings.Contains(got.Body.Next, "resume") {
			t.Fatalf("deciding %s on run %s: %d %+v; want 200, the run, channel approval-page and what happens next", choice, run, got.Status, got.Body)
		}
		if choice != "" && got.Body.Choice != choice {
			t.Fatalf("clicked %s, the hub recorded %s", choice, got.Body.Choice)
		}
		decisions = append(decisions, got.ToResponse)
		return got
	}
	// recorded checks the run record holds the page's decision (runs show
	// costs a CLI start: the four choices check it, the rest trust the
	// console's answer, sent after the record is written).
	recorded := func(run, choice string) {
		t.Helper()
		out := h.run("hub", "runs", "show", "--json", run)
		if !strings.Contains(out, `"channel": "approval-page"`) || !strings.Contains(out, `"choice": "`+choice+`"`) {
			t.Fatalf("the run record does not hold the page's decision %s:\n%s", choice, out)
		}
	}

	var loop string // the run allowed with "run": three writes
	t.Run("four choices", func(t *testing.T) {
		// once: this write runs; the run's next write asks again.
		r := h.exec(`await writer.record({item: "once 1"}); await writer.record({item: "once 2"}); return "both"`, "awaiting_approval")
		p.reload()
		decide(r.RunID, "writer.record", "once")
		recorded(r.RunID, "once")
		env := h.resume(r.RunID, "awaiting_approval")
		if len(env.Pending) != 1 || env.Pending[0].Address != "writer.record" {
			t.Fatalf("after once the run's second write should ask again: %+v", env.Pending)
		}
		h.wantLines(writes, 1)
		h.run("hub", "cancel", r.RunID)

		// run: every write of the run, asked once.
		r = h.exec(`let n = 0; for (let i = 0; i < 3; i++) { await writer.record({item: "run " + i}); n++ } return n`, "awaiting_approval")
		p.reload()
		decide(r.RunID, "writer.record", "run")
		recorded(r.RunID, "run")
		loop = r.RunID
		if env := h.resume(r.RunID, "completed"); string(env.Result) != "3" {
			t.Fatalf("the run's result: %s, want 3", env.Result)
		}
		h.wantLines(writes, 4)

		// always: a rule; the next run does not ask.
		r = h.exec(`return await keeper.record({item: "always 1"})`, "awaiting_approval")
		p.reload()
		decide(r.RunID, "keeper.record", "always")
		recorded(r.RunID, "always")
		h.resume(r.RunID, "completed")
		h.wantLines(keeps, 1)
		if out := h.run("hub", "policy", "list"); !strings.Contains(out, "keeper.record") || !strings.Contains(out, "allow") {
			t.Fatalf("no rule for keeper.record after always:\n%s", out)
		}
		h.exec(`return await keeper.record({item: "always 2"})`, "completed")
		h.wantLines(keeps, 2)

		// deny: no write; the code catches approval_denied.
		r = h.exec(`try { await writer.record({item: "denied"}); return "not denied" } catch (e) { return "caught " + e.code }`, "awaiting_approval")
		p.reload()
		decide(r.RunID, "writer.record", "deny")
		recorded(r.RunID, "deny")
		if env := h.resume(r.RunID, "completed"); string(env.Result) != `"caught approval_denied"` {
			t.Fatalf("the denied run's result: %s", env.Result)
		}
		h.wantLines(writes, 4)
	})

	const write = `try { return await writer.record({item: %q}) } catch (e) { return "caught " + e.code }`

	t.Run("keyboard only", func(t *testing.T) {
		runs := []string{
			h.exec(fmt.Sprintf(write, "key o"), "awaiting_approval").RunID,
			h.exec(fmt.Sprintf(write, "key Enter"), "awaiting_approval").RunID,
			h.exec(fmt.Sprintf(write, "key Tab"), "awaiting_approval").RunID,
		}
		p.reload()
		if d := p.dialogShowing(runs[0], map[string][]string{"focused": {"once"}}); d.Focused != "once" {
			t.Fatalf("the focus is on %q when a call opens, want the once button", d.Focused)
		}
		if got := decide(runs[0], "writer.record", "", "o"); got.Body.Choice != "once" {
			t.Fatalf("o decided %s", got.Body.Choice)
		}
		if got := decide(runs[1], "writer.record", "", "Enter"); got.Body.Choice != "once" {
			t.Fatalf("Enter decided %s", got.Body.Choice)
		}
		if got := decide(runs[2], "writer.record", "", "Tab", "Tab", "Tab", "Enter"); got.Body.Choice != "deny" {
			t.Fatalf("Tab to the fourth button and Enter decided %s, want deny", got.Body.Choice)
		}
		if c := p.closedSaying("Deny"); !strings.Contains(c.Status, "Deny") {
			t.Fatalf("after the last decision the page says %q, want what deny did", c.Status)
		}
		for i, env := range h.resumeAll(runs, "completed") {
			if denied := string(env.Result) == `"caught approval_denied"`; denied != (i == 2) {
				t.Fatalf("run %d's result: %s", i+1, env.Result)
			}
		}
		h.wantLines(writes, 6)
	})

	t.Run("queue of three", func(t *testing.T) {
		runs := []string{
			h.exec(fmt.Sprintf(write, "queue 1"), "awaiting_approval").RunID,
			h.exec(fmt.Sprintf(write, "queue 2"), "awaiting_approval").RunID,
			h.exec(fmt.Sprintf(write, "queue 3"), "awaiting_approval").RunID,
		}
		p.reload()
		d := p.dialogShowing(runs[0], map[string][]string{"head": {"Call 1 of 3"}, "args": {"queue 1"}})
		if !strings.HasPrefix(d.Head, "Call 1 of 3") || !strings.Contains(d.Args, "queue 1") {
			t.Fatalf("the first call of three: %+v", d)
		}
		p.screenshots(shots, "approval")
		var order []string
		for i, choice := range []string{"once", "run", "deny"} {
			// What the last decision did is written above the next call
			// once the page has its answer: waited for, not read once (one
			// CI run of two read call 3's before it was written).
			var want map[string][]string
			if i > 0 {
				want = map[string][]string{"notice": {"writer.record", "resume"}}
			}
			d := p.dialogShowing(runs[i], want)
			if i > 0 && (!strings.Contains(d.Notice, "writer.record") || !strings.Contains(d.Notice, "resume")) {
				t.Fatalf("call %d does not say what the last decision did: %+v", i+1, d)
			}
			if i == 1 {
				p.screenshots(shots, "approval-next")
			}
			order = append(order, decide(runs[i], "writer.record", choice).Body.Run)
		}
		if diff := cmp.Diff(runs, order); diff != "" {
			t.Fatalf("the calls were not decided in their queue's order (-want +got):\n%s", diff)
		}
		// The dialog closes on the last decision's answer; the list says
		// that nothing waits once the page has read the queue again (later,
		// on a loaded machine: one CI run of two read it too early).
		p.closed()
		p.text("#empty", "Nothing waits")
		p.screenshots(shots, "empty")
		h.resumeAll(runs, "completed")
		h.wantLines(writes, 8)
	})

	t.Run("a call arrives while one is open", func(t *testing.T) {
		// The open call's head says where it stands as calls come: it said
		// "Call 1 of 1" while the queue beside it grew.
		first := h.exec(fmt.Sprintf(write, "open 1"), "awaiting_approval").RunID
		p.reload()
		if d := p.dialogShowing(first, map[string][]string{"head": {"Call 1 of 1"}}); !strings.HasPrefix(d.Head, "Call 1 of 1") {
			t.Fatalf("the only call: %+v", d)
		}
		second := h.exec(fmt.Sprintf(write, "open 2"), "awaiting_approval").RunID
		var head struct{ Text string }
		p.do(map[string]any{"op": "text", "selector": "dialog#approval .position", "contains": "Call 1 of 2"}, &head)
		if !strings.Contains(head.Text, first) {
			t.Fatalf("after a second call the open card's head is %q, want the first call's", head.Text)
		}
		decide(first, "writer.record", "deny")
		decide(second, "writer.record", "deny")
		h.resumeAll([]string{first, second}, "completed")
	})

	t.Run("the call picked opens", func(t *testing.T) {
		// The desktop app opens #approvals/<run>/<call> for the
		// notification or tray item the person picked: that call opens,
		// not the oldest waiting.
		first := h.exec(fmt.Sprintf(write, "picked 1"), "awaiting_approval").RunID
		second := h.exec(fmt.Sprintf(write, "picked 2"), "awaiting_approval").RunID
		p.reload()
		p.dialog(first, "")
		p.do(map[string]any{"op": "hash", "hash": "#approvals/" + second + "/c1"}, nil)
		if d := p.dialogShowing(second, map[string][]string{"args": {"picked 2"}}); !strings.Contains(d.Args, "picked 2") {
			t.Fatalf("the call picked: %+v", d)
		}
		decide(second, "writer.record", "deny")
		decide(first, "writer.record", "deny")
		// A call picked that no longer waits: the page says so on the
		// next call it opens.
		third := h.exec(fmt.Sprintf(write, "picked 3"), "awaiting_approval").RunID
		p.do(map[string]any{"op": "hash", "hash": "#approvals/" + second + "/c1"}, nil)
		if d := p.dialogShowing(third, map[string][]string{"notice": {"No longer waiting", second}}); !strings.Contains(d.Notice, "No longer waiting") || !strings.Contains(d.Notice, second) {
			t.Fatalf("after picking a call decided elsewhere: %+v", d)
		}
		decide(third, "writer.record", "deny")
		h.resumeAll([]string{first, second, third}, "completed")
	})

	t.Run("the whole arguments", func(t *testing.T) {
		// A long item: the preview shows its head and tail; the person reads
		// all of it before deciding.
		long := "head " + strings.Repeat("x", 6000) + " MIDDLE-OF-IT " + strings.Repeat("y", 6000) + " tail"
		r := h.exec(fmt.Sprintf(write, long), "awaiting_approval")
		p.reload()
		d := p.dialogShowing(r.RunID, map[string][]string{"args": {"middle not shown", "y tail"}})
		if !strings.Contains(d.Args, "middle not shown") || !strings.Contains(d.Args, "y tail") || strings.Contains(d.Args, "MIDDLE-OF-IT") {
			t.Fatalf("the preview of a long argument: %.300q…; want its head and tail around the marker", d.Args)
		}
		p.do(map[string]any{"op": "click", "selector": ".show-all"}, nil)
		var all struct{ Text string }
		p.do(map[string]any{"op": "text", "selector": ".args", "contains": "MIDDLE-OF-IT"}, &all)
		if !strings.Contains(all.Text, long) {
			t.Fatalf("Show all did not show the whole argument (%d bytes shown)", len(all.Text))
		}
		decide(r.RunID, "writer.record", "deny")
		h.resume(r.RunID, "completed")
	})

	t.Run("over stdio", func(t *testing.T) {
		// An MCP client that cannot elicit runs serve --stdio: the write
		// pauses and serve opens the page itself, handing the link to
		// CAPABILITIES_BROWSER; the person decides in the page, the client
		// resumes and the write happens once.
		links := filepath.Join(work, "links-stdio")
		env := append(slices.Clone(h.env), "CAPABILITIES_TEST_LINKS="+links)
		p.do(map[string]any{"op": "mcpConnect", "command": h.bin, "args": []string{"hub", "serve", "--stdio"}, "env": envMap(env)}, nil)
		defer p.do(map[string]any{"op": "mcpClose"}, nil)
		r := p.execute(map[string]any{"code": fmt.Sprintf(write, "over stdio")})
		if r.Structured.Status != "awaiting_approval" || r.Structured.RunID == "" {
			t.Fatalf("execute over stdio: %+v %s", r.Structured, r.Text)
		}
		if strings.Contains(r.Text, "127.0.0.1:") || strings.Contains(r.Text, "token") {
			t.Fatalf("the envelope holds the page's link: %s", r.Text)
		}
		link, err := waitLink(links)
		if err != nil {
			t.Fatalf("serve --stdio: %v (envelope: %s)", err, r.Text)
		}
		var opened struct{ Status int }
		p.do(map[string]any{"op": "open", "url": link, "tab": true}, &opened)
		defer p.do(map[string]any{"op": "closeTab"}, nil)
		p.screenshots(shots, "stdio-approval")
		decide(r.Structured.RunID, "writer.record", "once")
		r = p.execute(map[string]any{"resume": r.Structured.RunID})
		if r.Structured.Status != "completed" || !strings.Contains(r.Text, "recorded over stdio") {
			t.Fatalf("resumed over stdio: %+v %s", r.Structured, r.Text)
		}
		want := []executeDecision{{Address: "writer.record", Choice: "once", Channel: "approval-page"}}
		if diff := cmp.Diff(want, r.Structured.Decisions); diff != "" {
			t.Fatalf("the envelope's decisions (-want +got):\n%s", diff)
		}
		h.wantLines(writes, 9)
	})

	t.Run("review accept", func(t *testing.T) {
		// A source whose tools change upstream after their review: refresh
		// finds it, the Review screen shows them changed, accept reviews them
		// again and the next call of the read-only echo does not ask.
		state := filepath.Join(work, "state.json")
		h.run("hub", "add", "--yes", "--namespace", "rev", "--env", "SCRIPTED_STATE="+state, "--", node, scripted)
		if err := os.WriteFile(state, []byte(`{"desc": " Now with more words."}`), 0o600); err != nil {
			t.Fatal(err)
		}
		h.run("hub", "refresh", "rev")
		p.reload()
		p.do(map[string]any{"op": "click", "selector": "#nav-review"}, nil)
		if got := p.text(`[data-testid=review-item][data-address="rev.echo"]`, "Now with more words."); !strings.Contains(got, "changed") || !strings.Contains(got, "Now with more words.") {
			t.Fatalf("the Review screen shows rev.echo as %q; want it changed, with its new description", got)
		}
		p.screenshots(shots, "review")
		p.do(map[string]any{"op": "click", "selector": "#review-accept"}, nil)
		if got := p.text(`[data-testid=review-accepted]`, "Accepted"); !strings.Contains(got, "Accepted 3 tool(s)") {
			t.Fatalf("after accept the Review screen says %q", got)
		}
		p.text("#review-empty", "Nothing to review")
		p.screenshots(shots, "review-accepted")
		if out := h.run("hub", "review", "--json"); strings.Contains(out, `"changed"`) {
			t.Fatalf("hub review still lists changed tools after the page accepted them:\n%s", out)
		}
		env := h.exec(`return await rev.echo({message: "after review"})`, "completed")
		if !strings.Contains(string(env.Result), "after review") {
			t.Fatalf("rev.echo's result: %s", env.Result)
		}
	})

	t.Run("import skills", func(t *testing.T) {
		// A skill in Claude Code's skills folder is offered on the Review
		// screen with its name and description; importing it from the page
		// puts it in the hub.
		doc := "---\nname: pdf-forms\ndescription: Fill PDF forms from the browser test.\n---\n# PDF forms\n"
		dir := filepath.Join(work, ".claude", "skills", "pdf-forms")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		p.do(map[string]any{"op": "click", "selector": "#nav-approvals"}, nil)
		p.do(map[string]any{"op": "click", "selector": "#nav-review"}, nil)
		if got := p.text(`[data-testid=import-skill][data-skill=pdf-forms]`, "Fill PDF forms from the browser test."); !strings.Contains(got, "skill:pdf-forms") || !strings.Contains(got, "Fill PDF forms from the browser test.") {
			t.Fatalf("the Review screen offers the skill as %q; want its name and description", got)
		}
		p.screenshots(shots, "import-skills", "#import")
		p.do(map[string]any{"op": "click", "selector": "[data-testid=import-skills]"}, nil)
		p.text("[data-testid=import-done]", "Imported 1 skill(s): pdf-forms.")
		if out := h.run("hub", "skills", "list", "--json"); !strings.Contains(out, `"name": "pdf-forms"`) {
			t.Fatalf("hub skills list after the import from the page:\n%s", out)
		}
		p.text(`[data-testid=import-other][data-skill=pdf-forms][data-status=in-hub]`, "already in the hub")
	})

	t.Run("runs timeline", func(t *testing.T) {
		if loop == "" {
			t.Fatal("the four choices journey made no run: the timeline has nothing to show (see its failure above)")
		}
		// The finished run allowed with "run": three writes, each a bar on
		// the run's time axis, the first decided by the person.
		p.do(map[string]any{"op": "click", "selector": "#nav-runs"}, nil)
		p.do(map[string]any{"op": "click", "selector": `[data-testid=run-row][data-run="` + loop + `"]`}, nil)
		detail := p.text(`[data-testid=run-detail][data-run="`+loop+`"]`, "writer.record")
		for _, want := range []string{"completed", "#1", "#2", "#3", "writer.record"} {
			if !strings.Contains(detail, want) {
				t.Fatalf("the run's detail lacks %q:\n%s", want, detail)
			}
		}
		if n := p.countOf(`[data-testid=run-detail] [data-testid=timeline-bar]`, 3); n != 3 {
			t.Fatalf("the timeline draws %d bars, want 3 (one per write)", n)
		}
		p.screenshots(shots, "runs", "[data-testid=run-detail]")

		// The filters of `hub runs`: a status applies at once, a namespace
		// on Enter; the list is the API's answer to that query.
		rows := func(query string) (all, loopRows, others int) {
			t.Helper()
			p.do(map[string]any{"op": "attached", "selector": `#runs-list[data-query="` + query + `"]`}, nil)
			return p.count(`[data-testid=run-row]`), p.count(`[data-testid=run-row][data-run="` + loop + `"]`), p.count(`[data-testid=run-row]:not([data-status=completed])`)
		}
		p.do(map[string]any{"op": "select", "selector": "#runs-status", "value": "completed"}, nil)
		if all, l, o := rows("/api/runs?status=completed"); all == 0 || l != 1 || o != 0 {
			t.Fatalf("status completed: %d rows, the loop run %d time(s), %d not completed", all, l, o)
		}
		p.do(map[string]any{"op": "fill", "selector": "#runs-namespace", "value": "writer"}, nil)
		p.do(map[string]any{"op": "press", "keys": []string{"Enter"}}, nil)
		if all, l, o := rows("/api/runs?status=completed&namespace=writer"); all == 0 || l != 1 || o != 0 {
			t.Fatalf("status completed, namespace writer: %d rows, the loop run %d time(s), %d not completed", all, l, o)
		}
		p.do(map[string]any{"op": "fill", "selector": "#runs-namespace", "value": "rev"}, nil)
		p.do(map[string]any{"op": "click", "selector": "#runs-apply"}, nil)
		if _, l, _ := rows("/api/runs?status=completed&namespace=rev"); l != 0 {
			t.Fatalf("namespace rev lists the loop run, which called writer only")
		}
		p.screenshots(shots, "runs-filtered")
		p.do(map[string]any{"op": "select", "selector": "#runs-status", "value": ""}, nil)
		p.do(map[string]any{"op": "fill", "selector": "#runs-namespace", "value": ""}, nil)
		p.do(map[string]any{"op": "click", "selector": "#runs-apply"}, nil)
		rows("/api/runs")

		// A week of an agent's work: the screen lists the newest 50, says
		// older ones are left out, and lists them on a click.
		before := p.count(`[data-testid=run-row]`)
		st, err := store.Open(filepath.Join(h.work, "home", "hub"))
		if err != nil {
			t.Fatal(err)
		}
		testenv.PutFinishedRuns(t, st, 60)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		p.do(map[string]any{"op": "click", "selector": "#runs-apply"}, nil)
		p.text("#runs-more-text", "The newest 50 runs are listed; older ones are not.")
		if n := p.countOf(`[data-testid=run-row]`, 50); n != 50 {
			t.Fatalf("a hub with %d runs lists %d; want the newest 50", before+60, n)
		}
		p.screenshots(shots, "runs-more", "#runs-older")
		p.do(map[string]any{"op": "click", "selector": "#runs-older"}, nil)
		rows("/api/runs?limit=100")
		p.do(map[string]any{"op": "attached", "selector": "#runs-more[hidden]"}, nil)
		if n := p.countOf(`[data-testid=run-row]`, before+60); n != before+60 {
			t.Fatalf("after Show older runs the screen lists %d runs; want all %d", n, before+60)
		}
	})

	t.Run("sources", func(t *testing.T) {
		p.do(map[string]any{"op": "click", "selector": "#nav-sources"}, nil)
		for _, tool := range []string{"writer.record", "keeper.record", "rev.echo"} {
			ns, _, _ := strings.Cut(tool, ".")
			if got := p.text(`[data-testid=source][data-namespace="`+ns+`"][data-health=ok]`, tool); !strings.Contains(got, "scripted.mjs") {
				t.Fatalf("the Sources screen shows %s as %q; want it healthy, with its command and tools", ns, got)
			}
		}
		p.screenshots(shots, "sources")
		p.do(map[string]any{"op": "click", "selector": "#nav-approvals"}, nil)
	})

	t.Run("settings", func(t *testing.T) {
		// A checkbox clicked on the Settings screen changes the hub's
		// settings file and the pause at once.
		p.do(map[string]any{"op": "click", "selector": "#nav-settings"}, nil)
		p.text("#settings-list", "Bring the approval window to the front")
		p.do(map[string]any{"op": "click", "selector": "#setting-raiseApprovals"}, nil)
		p.text("#settings-status", "Saved.")
		settings := filepath.Join(work, "home", "hub", "settings.json")
		b, err := os.ReadFile(settings)
		if err != nil || !strings.Contains(string(b), `"raiseApprovals": true`) {
			t.Fatalf("after the click, %s holds %q (%v); want raiseApprovals true", settings, b, err)
		}
		p.do(map[string]any{"op": "click", "selector": "#setting-paused"}, nil)
		paused := filepath.Join(work, "home", "hub", "paused")
		deadline := time.Now().Add(testenv.Timeout(10 * time.Second))
		for _, err := os.Stat(paused); err != nil; _, err = os.Stat(paused) {
			if time.Now().After(deadline) {
				t.Fatalf("Pause the hub clicked: no %s", paused)
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.screenshots(shots, "settings")
		p.do(map[string]any{"op": "click", "selector": "#setting-paused"}, nil)
		for _, err := os.Stat(paused); err == nil; _, err = os.Stat(paused) {
			if time.Now().After(deadline) {
				t.Fatalf("Pause the hub clicked again: %s is still there", paused)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The run retention: a number typed and left is saved.
		p.do(map[string]any{"op": "fill", "selector": "#setting-runRetentionDays", "value": "3"}, nil)
		p.do(map[string]any{"op": "press", "keys": []string{"Tab"}}, nil)
		p.do(map[string]any{"op": "fill", "selector": "#setting-runRetentionMB", "value": "64"}, nil)
		p.do(map[string]any{"op": "press", "keys": []string{"Tab"}}, nil)
		for {
			b, _ := os.ReadFile(settings)
			if strings.Contains(string(b), `"runRetentionDays": 3`) && strings.Contains(string(b), `"runRetentionMB": 64`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the retention typed on the Settings screen: %s holds %q", settings, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out := h.run("hub", "runs", "prune", "--json"); !strings.Contains(out, `"pruned": 0`) {
			t.Fatalf("hub runs prune by the new retention (no run is 3 days old, all fit in 64 MB): %s", out)
		}
		p.do(map[string]any{"op": "click", "selector": "#nav-approvals"}, nil)
	})

	if errs := p.errors(); len(errs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(errs, "\n"))
	}

	// Measured, never asserted (BENCHMARKS.md).
	for range 5 {
		paints = append(paints, p.reload().Paints["first-contentful-paint"])
	}
	t.Logf("first contentful paint: first load %.0f ms; median of %d loads %.0f ms (%v)", paints[0], len(paints), median(paints), paints)
	// The console answers a decision after its run record is written
	// (approval.Record), so this is the time to the record's update and
	// the page's learning of it.
	t.Logf("decision (click or key) → run record written and the page answered: median %.1f ms, max %.1f ms over %d decisions", median(decisions), slices.Max(decisions), len(decisions))
	t.Logf("screenshots in %s", shots)
}

// requireBrowser returns Chromium's path and testdata/npm/node_modules,
// which holds playwright-core.
// When one is missing it fails in CI (CI=true) and skips elsewhere, saying
// to run scripts/setup.sh --tests.
func requireBrowser(t *testing.T) (chromium, nodeModules string) {
	t.Helper()
	var missing []string
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		missing = append(missing, "Chromium (Debian's chromium-headless-shell)")
	}
	nodeModules = filepath.Join(testenv.Root(t), "testdata", "npm", "node_modules")
	if _, err := os.Stat(filepath.Join(nodeModules, "playwright-core", "package.json")); err != nil {
		missing = append(missing, "playwright-core in testdata/npm")
	}
	if len(missing) > 0 {
		msg := strings.Join(missing, " and ") + " missing: run scripts/setup.sh --tests"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return chromium, nodeModules
}

// browserHub runs the capabilities command on one hub.
type browserHub struct {
	t    *testing.T
	bin  string
	work string
	env  []string
}

// newBrowserHub is a hub in work, driven by the capabilities command (the
// test binary, as testscript.Main put it on PATH), without a keychain, whose
// console hands its one-time link to the test (testdata/browser/hand-link.sh).
// newWriterHub is a browser hub in a new directory with the scripted
// upstream added as writer (its record tool asks).
func newWriterHub(t *testing.T) *browserHub {
	t.Helper()
	h := newBrowserHub(t, t.TempDir())
	h.run("hub", "init")
	h.run("hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_TOOLS=4", "--", testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "upstreams", "scripted.mjs"))
	return h
}

func newBrowserHub(t *testing.T, work string) *browserHub {
	t.Helper()
	bin, err := exec.LookPath("capabilities")
	if err != nil {
		t.Fatalf("the capabilities command is not on PATH: %v", err)
	}
	node, root := testenv.Node(t), testenv.Root(t)
	return &browserHub{t: t, bin: bin, work: work, env: []string{
		"PATH=" + filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + work,
		"CAPABILITIES_HOME=" + filepath.Join(work, "home"),
		"CAPABILITIES_CONNECT_TIMEOUT=" + testenv.Timeout(source.DefaultConnectTimeout).String(),
		"CAPABILITIES_BROWSER=" + filepath.Join(root, "testdata", "browser", "hand-link.sh"),
		"CAPABILITIES_TEST_LINKS=" + filepath.Join(work, "links"),
		"NO_KEYRING=1",
	}}
}

func (h *browserHub) run(args ...string) string {
	h.t.Helper()
	out, err := h.command(args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// command runs capabilities with args and returns its stdout (it may run
// beside others: it does not fail the test).
func (h *browserHub) command(args ...string) (string, error) {
	cmd := exec.Command(h.bin, args...)
	cmd.Dir = h.work
	cmd.Env = h.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("capabilities %s: %w\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// browserEnvelope is what `hub exec --json` prints, in part.
type browserEnvelope struct {
	RunID   string          `json:"runId"`
	Status  string          `json:"status"`
	Result  json.RawMessage `json:"result"`
	Pending []struct {
		ID      string `json:"id"`
		Address string `json:"address"`
	} `json:"pending"`
}

func (h *browserHub) envelope(status string, args ...string) browserEnvelope {
	h.t.Helper()
	env, err := h.envelopeOf(status, args...)
	if err != nil {
		h.t.Fatal(err)
	}
	return env
}

func (h *browserHub) envelopeOf(status string, args ...string) (browserEnvelope, error) {
	var env browserEnvelope
	out, err := h.command(args...)
	if err != nil {
		return env, err
	}
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		return env, fmt.Errorf("capabilities %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	if env.Status != status {
		return env, fmt.Errorf("capabilities %s: the run is %s, want %s\n%s", strings.Join(args, " "), env.Status, status, out)
	}
	return env, nil
}

func (h *browserHub) exec(code, status string) browserEnvelope {
	h.t.Helper()
	return h.envelope(status, "hub", "exec", "--json", code)
}

func (h *browserHub) resume(run, status string) browserEnvelope {
	h.t.Helper()
	return h.envelope(status, "hub", "exec", "--json", "--resume", run)
}

// resumeAll resumes runs side by side (as several agents would), each to
// the status given.
func (h *browserHub) resumeAll(runs []string, status string) []browserEnvelope {
	h.t.Helper()
	envs := make([]browserEnvelope, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, id := range runs {
		wg.Go(func() { envs[i], errs[i] = h.envelopeOf(status, "hub", "exec", "--json", "--resume", id) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		h.t.Fatal(err)
	}
	return envs
}

// wantLines checks how many calls an upstream acted on.
func (h *browserHub) wantLines(file string, want int) {
	h.t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		h.t.Fatal(err)
	}
	if got := bytes.Count(b, []byte("\n")); got != want {
		h.t.Fatalf("the upstream acted on %d calls, want %d:\n%s", got, want, b)
	}
}

// console starts `hub console` and returns the link it handed to the
// "browser"; the console stops with the test.
func (h *browserHub) console() string {
	h.t.Helper()
	cmd := exec.Command(h.bin, "hub", "console")
	cmd.Dir = h.work
	cmd.Env = h.env
	var out syncedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	link, err := waitLink(filepath.Join(h.work, "links"))
	if err != nil {
		h.t.Fatalf("hub console: %v\n%s", err, out.String())
	}
	return link
}

// waitLink waits for the one link hand-link.sh wrote to a file.
func waitLink(file string) (string, error) {
	deadline := time.Now().Add(testenv.Timeout(15 * time.Second))
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(file); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			link := strings.TrimSpace(string(b))
			if strings.Contains(link, "\n") || !strings.HasPrefix(link, "http://127.0.0.1:") {
				return "", fmt.Errorf("the browser was handed %q, want one link", b)
			}
			return link, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", errors.New("no link was handed to CAPABILITIES_BROWSER")
}

type syncedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// driver is testdata/browser/driver.mjs: one headless Chromium and one page.
type driver struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Reader
}

func startDriver(t *testing.T, node, chromium, nodeModules string) *driver {
	t.Helper()
	cmd := exec.Command(node, filepath.Join(testenv.Root(t), "testdata", "browser", "driver.mjs"))
	cmd.Env = append(os.Environ(),
		"BROWSER_EXECUTABLE="+chromium,
		"NODE_MODULES="+nodeModules,
		"BROWSER_TIMEOUT_MS="+strconv.FormatInt(testenv.Timeout(15*time.Second).Milliseconds(), 10))
	var stderr syncedBuffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close() // the driver closes the browser and exits
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(testenv.Timeout(10 * time.Second)):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() && stderr.String() != "" {
			t.Logf("driver stderr:\n%s", stderr.String())
		}
	})
	d := &driver{t: t, in: in, out: bufio.NewReader(out)}
	var ready struct{ Version string }
	if err := d.read(&ready); err != nil {
		t.Fatalf("starting %s with playwright-core: %v\n%s", chromium, err, stderr.String())
	}
	t.Logf("Chromium %s", ready.Version)
	return d
}

func (d *driver) read(v any) error {
	line, err := d.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the driver's answer: %w", err)
	}
	var st struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &st); err != nil {
		return fmt.Errorf("reading the driver's answer %q: %w", line, err)
	}
	if !st.OK {
		return errors.New(st.Error)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(line, v)
}

func (d *driver) do(cmd map[string]any, v any) {
	d.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("sending %s to the driver: %v", cmd["op"], err)
	}
	if err := d.read(v); err != nil {
		d.t.Fatalf("browser %s: %v", b, err)
	}
}

type pageLoad struct{ Paints map[string]float64 }

func (d *driver) reload() pageLoad {
	d.t.Helper()
	var l pageLoad
	d.do(map[string]any{"op": "reload"}, &l)
	return l
}

// pageDialog is the open approval dialog's texts.
type pageDialog struct {
	Head, Address, Summary, Args, Notice, Focused string
	Choices                                       []string
}

func (d *driver) dialog(run, not string) pageDialog {
	d.t.Helper()
	var v pageDialog
	d.do(map[string]any{"op": "dialog", "run": run, "not": not}, &v)
	return v
}

// dialogShowing waits, with the driver's timeout, for the dialog about run
// whose texts hold want's (by the answer's field names: "notice", "head",
// "args", "focused"…), which the page may write after the dialog opens,
// and answers its texts. A test that reads a text written asynchronously
// once read it too early on a loaded machine.
func (d *driver) dialogShowing(run string, want map[string][]string) pageDialog {
	d.t.Helper()
	var v pageDialog
	d.do(map[string]any{"op": "dialog", "run": run, "want": want}, &v)
	return v
}

type pageClosed struct{ Status, Empty string }

func (d *driver) closed() pageClosed {
	d.t.Helper()
	var v pageClosed
	d.do(map[string]any{"op": "closed"}, &v)
	return v
}

// closedSaying waits until no dialog is open and the page's status holds
// the text (written as the dialog closes, or after).
func (d *driver) closedSaying(status string) pageClosed {
	d.t.Helper()
	var v pageClosed
	d.do(map[string]any{"op": "closed", "status": status}, &v)
	return v
}

// pageDecided is the answer to a decision the page sent.
type pageDecided struct {
	Status int
	Body   struct {
		Run, Call, Choice, Channel, Status, Next string
	}
	ToResponse float64 // ms from the click or last key to the answer's last byte
}

// choose clicks the choice's button, or presses the keys when given.
func (d *driver) choose(choice string, keys ...string) pageDecided {
	d.t.Helper()
	var v pageDecided
	cmd := map[string]any{"op": "choose", "choice": choice}
	if len(keys) > 0 {
		cmd["keys"] = keys
	}
	d.do(cmd, &v)
	return v
}

// screenshots saves the page at 1280×800 and 390×844, light and dark, as
// NAME-WIDTH-SCHEME.png, and leaves it at 1280×800 light. With a selector,
// its element is scrolled into view first.
func (d *driver) screenshots(dir, name string, scrollTo ...string) {
	d.t.Helper()
	for _, size := range [][2]int{{390, 844}, {1280, 800}} {
		for _, scheme := range []string{"dark", "light"} {
			file := filepath.Join(dir, fmt.Sprintf("%s-%d-%s.png", name, size[0], scheme))
			cmd := map[string]any{"op": "screenshot", "path": file, "width": size[0], "height": size[1], "scheme": scheme}
			if len(scrollTo) > 0 {
				cmd["scrollTo"] = scrollTo[0]
			}
			d.do(cmd, nil)
		}
	}
}

// text waits for the element holding contains (when given) and returns its text.
func (d *driver) text(selector, contains string) string {
	d.t.Helper()
	var v struct{ Text string }
	d.do(map[string]any{"op": "text", "selector": selector, "contains": contains}, &v)
	return v.Text
}

func (d *driver) count(selector string) int {
	d.t.Helper()
	var v struct{ Count int }
	d.do(map[string]any{"op": "count", "selector": selector}, &v)
	return v.Count
}

// countOf waits, with the driver's timeout, until want elements match
// (the page renders a list after it reads it), and answers how many do.
func (d *driver) countOf(selector string, want int) int {
	d.t.Helper()
	var v struct{ Count int }
	d.do(map[string]any{"op": "count", "selector": selector, "want": want}, &v)
	return v.Count
}

// executeResult is what the execute tool answered over MCP, in part.
type executeResult struct {
	Structured struct {
		RunID     string            `json:"runId"`
		Status    string            `json:"status"`
		Decisions []executeDecision `json:"decisions"`
	}
	Text string
}

type executeDecision struct {
	Address, Choice, Channel string
}

func (d *driver) execute(args map[string]any) executeResult {
	d.t.Helper()
	var v executeResult
	args["op"] = "execute"
	d.do(args, &v)
	return v
}

// envMap is an environment as the MCP SDK's stdio transport takes it.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func (d *driver) errors() []string {
	d.t.Helper()
	var v struct{ Errors []string }
	d.do(map[string]any{"op": "errors"}, &v)
	return v.Errors
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestConsoleRefusedDecisionStaysInSight: the call the page shows is decided
// elsewhere (`hub approve`) before the person answers it in the page; the
// page's decision is refused (409), and the next call, which opens at once,
// says above it that the decision was not recorded and why, instead of the
// refusal waiting unseen behind the dialog.
func TestConsoleRefusedDecisionStaysInSight(t *testing.T) {
	chromium, pw := requireBrowser(t)
	node := testenv.Node(t)
	h := newWriterHub(t)
	first := h.exec(`return await writer.record({item: "first"})`, "awaiting_approval").RunID
	second := h.exec(`return await writer.record({item: "second"})`, "awaiting_approval").RunID

	link := h.console()
	p := startDriver(t, node, chromium, pw)
	p.do(map[string]any{"op": "open", "url": link}, nil)
	if d := p.dialog(first, ""); d.Address != "writer.record" {
		t.Fatalf("the dialog shows %+v, want run %s's call", d, first)
	}
	// The page reads no queue until the click: its poll (every 3 s) found
	// the CLI's decision first on a loaded machine, opened the next call,
	// and the click decided that one (200).
	p.do(map[string]any{"op": "hold", "path": "/api/approvals"}, nil)
	h.run("hub", "approve", first, "--choice", "deny")
	got := p.choose("once")
	p.do(map[string]any{"op": "release", "path": "/api/approvals"}, nil)
	if got.Status != 409 {
		t.Fatalf("deciding a call the CLI decided: %d %+v, want 409", got.Status, got.Body)
	}
	d := p.dialogShowing(second, map[string][]string{"notice": {"Not recorded", "already decided (deny via cli)"}})
	if !strings.Contains(d.Notice, "Not recorded") || !strings.Contains(d.Notice, "already decided (deny via cli)") {
		t.Errorf("the next call's notice is %q; want it to say the decision was not recorded and why", d.Notice)
	}
}

// TestConsoleSaysWhenItStopped: `hub console --run` stops when the run's
// pending call expires (and any console stops on Ctrl-C); the page still
// open then says that the console is not answering and what to run,
// closes the call, and offers no choice, instead of keeping the call open
// with "Failed to fetch" under it.
func TestConsoleSaysWhenItStopped(t *testing.T) {
	chromium, pw := requireBrowser(t)
	node := testenv.Node(t)
	h := newWriterHub(t)
	work := h.work
	ttl := testenv.Timeout(8 * time.Second)
	h.env = append(h.env, "CAPABILITIES_APPROVAL_TTL="+ttl.String())
	r := h.exec(`return await writer.record({item: "late"})`, "awaiting_approval").RunID

	cmd := exec.Command(h.bin, "hub", "console", "--run", r)
	cmd.Dir, cmd.Env = work, h.env
	var out syncedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	link, err := waitLink(filepath.Join(work, "links"))
	if err != nil {
		t.Fatalf("hub console: %v\n%s", err, out.String())
	}
	p := startDriver(t, node, chromium, pw)
	p.do(map[string]any{"op": "open", "url": link}, nil)
	p.dialog(r, "")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("hub console --run at its run's expiry: %v\n%s", err, out.String())
	}
	// The page's next poll finds the console gone ("not answering"), or,
	// on a slow machine, reaches it in the instant between the page's
	// expiry and the console's exit ("this page expired"), or as the
	// exiting console has dropped its sessions ("open the console with the
	// one-time link"): each way it says what to run.
	var said struct{ Text string }
	p.do(map[string]any{"op": "text", "selector": "#error", "contains": "capabilities hub console"}, &said)
	if !strings.Contains(said.Text, "not answering") && !strings.Contains(said.Text, "expired") && !strings.Contains(said.Text, "one-time link") {
		t.Errorf("the page says %q; want what stopped and what to run", said.Text)
	}
	p.closed()
	if n := p.countOf("#queue li", 0); n != 0 {
		t.Errorf("the page still lists %d call(s) after its console stopped", n)
	}
	var badge struct{ Text string }
	if p.do(map[string]any{"op": "text", "selector": "#nav-approvals", "exact": "Approvals"}, &badge); strings.TrimSpace(badge.Text) != "Approvals" {
		t.Errorf("the Approvals tab reads %q after the console stopped; want no count", badge.Text)
	}
}

// TestConsoleGoesOnAfterAnExpiredCall: the first call of the queue expired
// while the page showed it; deciding it is refused (410), and the page
// goes on: the next call opens, saying the last decision was not
// recorded, and is decided, instead of the whole page stopping as if it
// had expired itself.
func TestConsoleGoesOnAfterAnExpiredCall(t *testing.T) {
	chromium, pw := requireBrowser(t)
	node := testenv.Node(t)
	h := newWriterHub(t)
	env := h.env
	h.env = append(slices.Clip(env), "CAPABILITIES_APPROVAL_TTL=2s")
	late := h.exec(`return await writer.record({item: "late"})`, "awaiting_approval").RunID
	h.env = env
	next := h.exec(`return await writer.record({item: "next"})`, "awaiting_approval").RunID
	time.Sleep(2 * time.Second)

	link := h.console()
	p := startDriver(t, node, chromium, pw)
	p.do(map[string]any{"op": "open", "url": link}, nil)
	p.dialog(late, "")
	if got := p.choose("once"); got.Status != 410 {
		t.Fatalf("deciding an expired call: %d %+v, want 410", got.Status, got.Body)
	}
	d := p.dialogShowing(next, map[string][]string{"notice": {"Not recorded", "expired"}})
	if !strings.Contains(d.Notice, "Not recorded") || !strings.Contains(d.Notice, "expired") {
		t.Errorf("the next call's notice is %q; want it to say the decision was not recorded as the call expired", d.Notice)
	}
	if got := p.choose("deny"); got.Status != 200 || got.Body.Run != next {
		t.Fatalf("deciding the next call after an expired one: %d %+v, want 200", got.Status, got.Body)
	}
}
