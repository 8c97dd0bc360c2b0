package inbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/inbox"
	"github.com/capabilities-sh/capabilities/engine/inbox/inboxtest"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/google/go-cmp/cmp"
)

// Two tenants, named as identity.TenantID names them.
var (
	tnA = "tn_" + strings.Repeat("a", 32)
	tnB = "tn_" + strings.Repeat("b", 32)
)

type newServer func(t testing.TB, opts inbox.Options, tenants ...string) *inboxtest.Server

// forEachStore runs test with each tenant's hub on its own in-memory
// store, then on PostgreSQL: the tenants' views (postgres.Store.Tenant)
// of one database, as the hosted hub keeps them.
func forEachStore(t *testing.T, test func(*testing.T, newServer)) {
	t.Run("memory", func(t *testing.T) { test(t, inboxtest.New) })
	t.Run("postgres", func(t *testing.T) {
		pg := testenv.StartPostgres(t)
		u := pg.NewDatabase(t)
		ctx := context.Background()
		if err := postgres.Migrate(ctx, u); err != nil {
			t.Fatal(err)
		}
		root, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = root.Close() })
		test(t, func(t testing.TB, opts inbox.Options, tenants ...string) *inboxtest.Server {
			return inboxtest.NewOn(t, opts, func(t testing.TB, tenant string) store.Store {
				v := root.Tenant(tenant)
				t.Cleanup(func() { _ = v.Close() })
				return v
			}, tenants...)
		})
	})
}

const writeCode = `return await up.record({item: "from the desktop"})`

// do sends a request with token (none when empty) and returns the status
// and body.
func do(t *testing.T, method, url, token string, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: testenv.Timeout(60 * time.Second)}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, data
}

func list(t *testing.T, s *inboxtest.Server, tenant string) console.Approvals {
	t.Helper()
	code, data := do(t, http.MethodGet, s.URL+"/api/inbox", inboxtest.Token(tenant), "")
	if code != http.StatusOK {
		t.Fatalf("GET /api/inbox as %s: %d %s", tenant, code, data)
	}
	var in console.Approvals
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatalf("GET /api/inbox: %v in %s", err, data)
	}
	return in
}

func decideBody(run, call, decision string) string {
	b, _ := json.Marshal(inbox.Decide{Run: run, Call: call, Decision: decision})
	return string(b)
}

// TestInboxListsAndDecides: the tenant's pending call is listed as the
// console lists it (address, arguments); a decision from the person's
// desktop is recorded with the channel desktop and the person's account,
// the run goes on at once and the upstream write is made exactly once; the
// inbox is then empty, and deciding again is a conflict.
func TestInboxListsAndDecides(t *testing.T) {
	forEachStore(t, testInboxListsAndDecides)
}

func testInboxListsAndDecides(t *testing.T, newServer newServer) {
	s := newServer(t, inbox.Options{}, tnA)
	a := s.Tenants[tnA]
	if got := list(t, s, tnA); len(got.Approvals) != 0 {
		t.Fatalf("a fresh hub's inbox: %+v", got.Approvals)
	}
	runID, callID := a.Pending(t, writeCode)
	in := list(t, s, tnA)
	if len(in.Approvals) != 1 {
		t.Fatalf("the inbox lists %d calls, want 1: %+v", len(in.Approvals), in.Approvals)
	}
	got := in.Approvals[0]
	if got.Run != runID || got.ID != callID || got.Address != "up.record" || got.Kind != model.PendingApproval {
		t.Errorf("the call listed: %+v; want run %s call %s up.record", got, runID, callID)
	}
	if !strings.Contains(string(got.Args), "from the desktop") {
		t.Errorf("the call's arguments are not shown: %s", got.Args)
	}
	if diff := cmp.Diff(model.Choices, got.Choices); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
	if n := a.UpstreamCalls(t); n != 0 {
		t.Fatalf("the upstream acted %d times before a decision", n)
	}

	code, data := do(t, http.MethodPost, s.URL+"/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, "once"))
	if code != http.StatusOK {
		t.Fatalf("deciding: %d %s", code, data)
	}
	var d inbox.Decided
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	want := inbox.Decided{Run: runID, Call: callID, Decision: model.ChoiceOnce, Channel: approval.ChannelDesktop, Status: string(model.RunCompleted)}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("the answer (-want +got):\n%s", diff)
	}
	r := a.Run(t, runID)
	if r.Status != model.RunCompleted {
		t.Errorf("the run is %s after the decision, want completed (%+v)", r.Status, r.Error)
	}
	dec := r.PendingItem(callID).Decision
	if dec == nil || dec.Channel != approval.ChannelDesktop || dec.By != tnA || dec.Choice != model.ChoiceOnce {
		t.Errorf("the decision recorded: %+v; want once via desktop by tnA", dec)
	}
	if n := a.UpstreamCalls(t); n != 1 {
		t.Errorf("the upstream acted %d times, want exactly once", n)
	}
	if got := list(t, s, tnA); len(got.Approvals) != 0 {
		t.Errorf("the inbox after the decision: %+v", got.Approvals)
	}
	code, data = do(t, http.MethodPost, s.URL+"/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, "deny"))
	if code != http.StatusConflict || !strings.Contains(string(data), "already decided (once via desktop)") {
		t.Errorf("deciding again: %d %s; want 409 already decided", code, data)
	}
	if n := a.UpstreamCalls(t); n != 1 {
		t.Errorf("after a second decision the upstream acted %d times, want 1", n)
	}
}

// event is one Server-Sent Event.
type event struct {
	name, data string
}

// stream reads /api/inbox/events; comments (heartbeats) come as name ":".
func stream(t *testing.T, ctx context.Context, url, token string) (<-chan event, *http.Response) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/inbox/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan event, 64)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ch <- ev
				}
				ev = event{}
			case strings.HasPrefix(line, ":"):
				ev.name = ":"
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return ch, res
}

// next waits for the next event that is not a heartbeat.
func next(t *testing.T, ch <-chan event, what string) event {
	t.Helper()
	timeout := time.After(testenv.Timeout(60 * time.Second))
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("%s: the stream ended", what)
			}
			if ev.name != ":" {
				return ev
			}
		case <-timeout:
			t.Fatalf("%s: no event", what)
		}
	}
}

// TestEvents: the stream starts with the inbox, says when a write asks
// (added, with the call as the console shows it) and when it is decided
// (settled), sends heartbeats while nothing happens, and ends when the
// client goes.
func TestEvents(t *testing.T) {
	forEachStore(t, testEvents)
}

func testEvents(t *testing.T, newServer newServer) {
	s := newServer(t, inbox.Options{Heartbeat: 50 * time.Millisecond}, tnA)
	a := s.Tenants[tnA]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, res := stream(t, ctx, s.URL, inboxtest.Token(tnA))
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("the stream: %s %q", res.Status, res.Header.Get("Content-Type"))
	}
	first := next(t, ch, "the inbox")
	if first.name != "inbox" || first.data != `{"approvals":[],"interrupted":[]}` {
		t.Fatalf("the first event: %+v", first)
	}
	// Heartbeats come while nothing happens.
	timeout := time.After(testenv.Timeout(30 * time.Second))
	for beat := false; !beat; {
		select {
		case ev := <-ch:
			if ev.name != ":" {
				t.Fatalf("an event while nothing happened: %+v", ev)
			}
			beat = true
		case <-timeout:
			t.Fatal("no heartbeat")
		}
	}
	runID, callID := a.Pending(t, writeCode)
	added := next(t, ch, "a write asks")
	var ap console.Approval
	if err := json.Unmarshal([]byte(added.data), &ap); err != nil || added.name != "added" {
		t.Fatalf("after a write asked: %+v (%v)", added, err)
	}
	if ap.Run != runID || ap.ID != callID || ap.Address != "up.record" || !strings.Contains(string(ap.Args), "from the desktop") {
		t.Errorf("the call added: %+v", ap)
	}
	code, data := do(t, http.MethodPost, s.URL+"/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, "deny"))
	if code != http.StatusOK {
		t.Fatalf("deciding: %d %s", code, data)
	}
	settled := next(t, ch, "the call decided")
	if settled.name != "settled" || settled.data != `{"run":"`+runID+`","call":"`+callID+`"}` {
		t.Errorf("after the decision: %+v", settled)
	}
	if n := a.UpstreamCalls(t); n != 0 {
		t.Errorf("a denied write: the upstream acted %d times", n)
	}
	cancel()
	timeout = time.After(testenv.Timeout(30 * time.Second))
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the stream did not end when the client went")
		}
	}
}

// TestRefusals is I5 and I2 at the inbox, written as the attacker would
// try: tenant B's valid token aimed at tenant A's run and call is answered
// exactly as an id that never existed, B's inbox and stream show none of
// A's calls, and a token without the scope "hub" (what an MCP client gets)
// or none at all decides nothing. Bad input is a 400 that says what is
// wrong. After all of it, A's call still waits, undecided.
func TestRefusals(t *testing.T) {
	forEachStore(t, testRefusals)
}

func testRefusals(t *testing.T, newServer newServer) {
	s := newServer(t, inbox.Options{}, tnA, tnB)
	a := s.Tenants[tnA]
	runID, callID := a.Pending(t, writeCode)
	// B sees none of A's calls.
	if got := list(t, s, tnB); len(got.Approvals) != 0 {
		t.Errorf("tenant B's inbox lists %+v", got.Approvals)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chB, _ := stream(t, ctx, s.URL, inboxtest.Token(tnB))
	if first := next(t, chB, "B's stream"); first.data != `{"approvals":[],"interrupted":[]}` {
		t.Errorf("tenant B's stream starts with %+v", first)
	}
	// A's next call reaches A's stream, and not B's.
	chA, _ := stream(t, ctx, s.URL, inboxtest.Token(tnA))
	if first := next(t, chA, "A's stream"); !strings.Contains(first.data, runID) {
		t.Errorf("tenant A's stream starts with %+v", first)
	}
	run2, _ := a.Pending(t, writeCode)
	if ev := next(t, chA, "A's second call"); ev.name != "added" || !strings.Contains(ev.data, run2) {
		t.Errorf("tenant A's stream: %+v", ev)
	}
	drain := time.After(500 * time.Millisecond) // B's stream had as long as A's, and this more
	for drained := false; !drained; {
		select {
		case ev := <-chB:
			if ev.name != ":" {
				t.Errorf("tenant B's stream got %+v", ev)
			}
		case <-drain:
			drained = true
		}
	}
	cancel()

	// Another tenant's ids are unknown ids: the same status and words.
	const unknownRun = "r0000000000000000000000000"
	_, theirs := do(t, http.MethodPost, s.URL+"/api/inbox/decide", inboxtest.Token(tnB), decideBody(runID, callID, "once"))
	_, never := do(t, http.MethodPost, s.URL+"/api/inbox/decide", inboxtest.Token(tnB), decideBody(unknownRun, callID, "once"))
	if diff := cmp.Diff(strings.ReplaceAll(string(never), unknownRun, runID), string(theirs)); diff != "" {
		t.Errorf("another tenant's run is answered unlike an unknown one (-unknown +theirs):\n%s", diff)
	}

	tests := []struct {
		name, method, path, token, body string
		code                            int
		contains                        string
	}{
		{"B decides A's call", "POST", "/api/inbox/decide", inboxtest.Token(tnB), decideBody(runID, callID, "once"), 404, "no pending call"},
		{"B decides A's call always", "POST", "/api/inbox/decide", inboxtest.Token(tnB), decideBody(runID, callID, "always"), 404, "no pending call"},
		{"A decides a call that is not", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, "c99", "once"), 404, "no pending call c99"},
		{"mcp scope lists", "GET", "/api/inbox", inboxtest.MCPToken(tnA), "", 403, `lacks the scope \"hub\"`},
		{"mcp scope watches", "GET", "/api/inbox/events", inboxtest.MCPToken(tnA), "", 403, `lacks the scope \"hub\"`},
		{"mcp scope decides", "POST", "/api/inbox/decide", inboxtest.MCPToken(tnA), decideBody(runID, callID, "once"), 403, `lacks the scope \"hub\"`},
		{"no token", "POST", "/api/inbox/decide", "", decideBody(runID, callID, "once"), 401, "no bearer token"},
		{"unknown token", "GET", "/api/inbox", "tok-hub-tn_c", "", 401, "unknown"},
		{"bad decision", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, "yes"), 400, `\"yes\" is not a choice`},
		{"no decision", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, ""), 400, "the decision is missing"},
		{"no run", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody("", callID, "once"), 400, "names no run"},
		{"no call", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, "", "once"), 400, "names no call"},
		{"bad run id", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody("../runs/x", callID, "once"), 400, "is not an id"},
		{"unknown field", "POST", "/api/inbox/decide", inboxtest.Token(tnA), `{"run":"` + runID + `","call":"` + callID + `","decision":"once","channel":"cli"}`, 400, `unknown field \"channel\"`},
		{"not JSON", "POST", "/api/inbox/decide", inboxtest.Token(tnA), `decision=once`, 400, "reading the decision"},
		{"two objects", "POST", "/api/inbox/decide", inboxtest.Token(tnA), decideBody(runID, callID, "once") + "{}", 400, "one JSON object only"},
		{"GET decide", "GET", "/api/inbox/decide", inboxtest.Token(tnA), "", 404, "use GET /api/inbox, GET /api/inbox/events or POST /api/inbox/decide"},
		{"unknown route", "GET", "/api/inbox/nope", inboxtest.Token(tnA), "", 404, "no inbox route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, data := do(t, tt.method, s.URL+tt.path, tt.token, tt.body)
			if code != tt.code || !strings.Contains(string(data), tt.contains) {
				t.Errorf("%s %s: %d %s; want %d containing %q", tt.method, tt.path, code, data, tt.code, tt.contains)
			}
		})
	}
	r := a.Run(t, runID)
	if r.Status != model.RunAwaitingApproval || r.PendingItem(callID).Decision != nil {
		t.Errorf("after the refusals A's run is %s with decision %+v", r.Status, r.PendingItem(callID).Decision)
	}
	if n := a.UpstreamCalls(t); n != 0 {
		t.Errorf("after the refusals the upstream acted %d times", n)
	}
	if got := list(t, s, tnA); len(got.Approvals) != 2 {
		t.Errorf("A's inbox after the refusals: %+v", got.Approvals)
	}
}

// TestNoMCPPathToTheInbox (I2): the packages a model's input flows
// through, and the MCP server, do not depend on engine/inbox: the only way
// to it is the person's bearer token with the scope "hub" (TestRefusals
// shows a token of scope "mcp" refused).
func TestNoMCPPathToTheInbox(t *testing.T) {
	const module = "github.com/capabilities-sh/capabilities/"
	for _, pkg := range []string{"engine/mcpserver", "engine/hub", "engine/run", "engine/sandbox", "engine/source", "engine/elicit"} {
		cmd := exec.Command("go", "list", "-deps", "./"+pkg)
		cmd.Dir = testenv.Root(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		if !bytes.Contains(out, []byte(module+pkg+"\n")) {
			t.Fatalf("go list -deps %s does not list the package itself: %s", pkg, out)
		}
		if bytes.Contains(out, []byte(module+"engine/inbox\n")) {
			t.Errorf("%s depends on engine/inbox: a model's input could reach the person's decisions", pkg)
		}
	}
}
