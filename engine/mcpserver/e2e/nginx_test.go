package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/mcpserver"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// hubProc is one `hub serve --http` of a hub on PostgreSQL, with a home
// folder of its own (its machine) and its own browser's links file.
type hubProc struct {
	node   string
	home   string
	port   int
	links  string // the approval pages it opened, one link a line
	stderr *testenv.Buffer
	cmd    *exec.Cmd
}

func (p *hubProc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// nginxOut is what nginx_client.mjs prints.
type nginxOut struct {
	SessionID       *string
	ProtocolVersion string
	ToolNames       []string
	Search          toolResult
	Describe        toolResult
	Read            toolResult
	Write           toolResult
	Resume          struct {
		toolResult
		Structured *struct {
			envelope
			Decisions []struct{ ID, Address, Choice, Channel string }
		} `json:"structured"`
	}
	Wire []struct {
		HTTP, Method, Sent, Got, Protocol string
		Status                            int
	}
}

// TestThroughNginx is the hub beyond one machine, end to end: a hub on a
// real PostgreSQL, three `hub serve --http` processes (three machines: each
// its own CAPABILITIES_HOME, node name and port) behind a real nginx
// running deploy/nginx/capabilities.conf as committed, its ports changed.
//
//   - @modelcontextprotocol/sdk 1.x clients hold older-protocol sessions:
//     each session's id names the process that made it, and nginx sends
//     every request of the session there (its access log says where each
//     went); initializes go round robin.
//   - the @modelcontextprotocol/client 2.x client (2026-07-28) needs no
//     affinity: its requests are spread over the processes.
//   - both search, describe and execute through nginx.
//   - a write asks: the run awaits approval on process X, which opens its
//     approval page; the agent's resumes, spread by nginx, make another
//     process Y open its own; the person decides in Y's page; the decision
//     wakes the hub (LISTEN/NOTIFY) and exactly one process finishes the run
//     before the agent comes back; the agent's execute({resume}) through
//     nginx, on whatever process, gets the finished envelope. The write is
//     made once.
//   - a session no process holds is answered 404 through nginx (the
//     client's cue to start a new one).
func TestThroughNginx(t *testing.T) {
	t.Parallel()
	pg := testenv.StartPostgres(t)
	db := pg.NewDatabase(t)
	work := t.TempDir()
	node := testenv.Node(t)
	clients := clientsDir(t)

	procs := make([]*hubProc, 3)
	for i := range procs {
		procs[i] = &hubProc{
			node:  fmt.Sprintf("hub%d", i+1),
			home:  filepath.Join(work, fmt.Sprintf("m%d", i+1)),
			links: filepath.Join(work, fmt.Sprintf("links%d.txt", i+1)),
		}
	}
	env := func(p *hubProc) []string {
		return append(os.Environ(), "CAPABILITIES_HOME="+p.home, "CAPABILITIES_STORE="+db, "CAP_BIN="+binPath,
			"CAPABILITIES_CONNECT_TIMEOUT="+testenv.Timeout(source.DefaultConnectTimeout).String(),
			"CAPABILITIES_NO_BROWSER=", "CAPABILITIES_BROWSER="+node+" "+filepath.Join(clients, "record_link.mjs"),
			"PAGE_LINKS="+p.links, "CAPABILITIES_LOG=debug", "CAPABILITIES_NODE=")
	}
	cli := func(p *hubProc, args ...string) string {
		t.Helper()
		cmd := exec.Command(binPath, args...)
		cmd.Env = env(p)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("capabilities %s (home %s): %v\n%s%s", strings.Join(args, " "), p.home, err, out, stderr.Bytes())
		}
		return string(out)
	}

	// The hub: made once, on the first machine; its sources are the
	// database's, and every process starts its own upstream processes,
	// which append their calls to the same files.
	cli(procs[0], "hub", "init")
	readerCalls, writerCalls := filepath.Join(work, "reader-calls.jsonl"), filepath.Join(work, "writer-calls.jsonl")
	cli(procs[0], append([]string{"hub", "add", "--yes", "--namespace", "reader", "--env", "SCRIPTED_CALLS=" + readerCalls, "--"}, testenv.Scripted(t)...)...)
	cli(procs[0], append([]string{"hub", "add", "--yes", "--namespace", "writer", "--env", "SCRIPTED_CALLS=" + writerCalls, "--env", "SCRIPTED_TOOLS=4", "--"}, testenv.Scripted(t)...)...)

	// One bearer token for every process: the hub's (in the database, or
	// in the first machine's folder, then given to the others' as a
	// person copies it).
	token := strings.TrimSpace(cli(procs[0], "hub", "http-token"))
	if len(token) < 32 {
		t.Fatalf("hub http-token printed %q", token)
	}
	if b, err := os.ReadFile(filepath.Join(procs[0].home, "hub", mcpserver.TokenFile)); err == nil {
		for _, p := range procs[1:] {
			if err := os.MkdirAll(filepath.Join(p.home, "hub"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.home, "hub", mcpserver.TokenFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, p := range procs {
		p.port = testenv.FreePort(t)
		p.cmd = exec.Command(binPath, "hub", "serve", "--http", "--node", p.node, "--port", strconv.Itoa(p.port))
		p.cmd.Env = env(p)
		p.stderr = &testenv.Buffer{}
		p.cmd.Stderr = p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("starting hub serve --http --node %s: %v", p.node, err)
		}
		t.Cleanup(func() { stopProc(t, p) })
	}
	for _, p := range procs {
		waitReady(t, p)
	}

	// nginx with the repository's configuration, only its ports changed.
	conf, err := os.ReadFile(filepath.Join(testenv.Root(t), "deploy", "nginx", "capabilities.conf"))
	if err != nil {
		t.Fatal(err)
	}
	ngx := testenv.StartNginx(t, func(port int) string {
		s := string(conf)
		for old, repl := range map[string]string{
			"127.0.0.1:8790": "127.0.0.1:" + strconv.Itoa(port),
			"127.0.0.1:4791": procs[0].addr(), "127.0.0.1:4792": procs[1].addr(), "127.0.0.1:4793": procs[2].addr(),
		} {
			if !strings.Contains(s, old) {
				t.Fatalf("deploy/nginx/capabilities.conf no longer has %s, which this test changes to a free port", old)
			}
			s = strings.ReplaceAll(s, old, repl)
		}
		return s
	})
	endpoint := ngx.URL() + "/mcp"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("nginx's access log:\n%s\nnginx's error log:\n%s", ngx.AccessLog(), ngx.Logs())
			for _, p := range procs {
				t.Logf("%s's log:\n%s", p.node, p.stderr.String())
			}
		}
	})
	runClient := func(args ...string) nginxOut {
		t.Helper()
		cmd := exec.Command(node, append([]string{filepath.Join(clients, "nginx_client.mjs")}, args...)...)
		cmd.Env = append(os.Environ(), "CAP_URL="+endpoint, "CAP_TOKEN="+token, "CAP_BIN="+binPath)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("node nginx_client.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		var out nginxOut
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatalf("nginx_client.mjs printed something that is not JSON: %v\n%s", err, stdout.String())
		}
		return out
	}
	byNode := map[string]*hubProc{}
	for _, p := range procs {
		byNode[p.node] = p
	}
	checkTour := func(who string, out nginxOut) {
		t.Helper()
		if diff := cmp.Diff([]string{"describe", "execute", "search"}, out.ToolNames); diff != "" {
			t.Errorf("%s: tools (-want +got):\n%s", who, diff)
		}
		if out.Search.IsError || !strings.Contains(out.Search.Text, "reader.echo") {
			t.Errorf("%s: search = %+v, want reader.echo among the results", who, out.Search)
		}
		if out.Describe.IsError || !strings.Contains(out.Describe.Text, "echo") {
			t.Errorf("%s: describe = %+v", who, out.Describe)
		}
		if e := out.Read.Structured; e == nil || e.Status != "completed" || string(e.Result) != `"Echo: through nginx"` {
			t.Errorf("%s: the read-only execute = %+v %q", who, e, out.Read.Text)
		}
	}

	// 1.x sessions: three initializes, round robin; every later request
	// of a session carries its id, which names a process.
	sessionNodes := map[string]bool{}
	for i := range 3 {
		out := runClient("sdk1", "tour")
		who := fmt.Sprintf("sdk1 session #%d", i+1)
		checkTour(who, out)
		if out.SessionID == nil || byNode[mcpserver.NodeOf(*out.SessionID)] == nil {
			t.Fatalf("%s: session id %v names none of the processes", who, out.SessionID)
		}
		sessionNodes[mcpserver.NodeOf(*out.SessionID)] = true
		for _, w := range out.Wire {
			if w.Status >= 300 {
				t.Errorf("%s: %s %s answered %d through nginx", who, w.HTTP, w.Method, w.Status)
			}
			if w.Method != "initialize" && w.HTTP != "DELETE" && w.Sent != *out.SessionID {
				t.Errorf("%s: %s %s sent session %q, want %q", who, w.HTTP, w.Method, w.Sent, *out.SessionID)
			}
		}
	}
	if len(sessionNodes) < 2 {
		t.Errorf("three initializes through nginx all made sessions on %v: round robin would spread them", sessionNodes)
	}

	// The 2.x client: 2026-07-28, no session, its requests anywhere.
	out2 := runClient("sdk2", "tour")
	checkTour("sdk2", out2)
	if out2.ProtocolVersion != "2026-07-28" || out2.SessionID != nil {
		t.Errorf("sdk2: protocol %q, session %v; want 2026-07-28 and none", out2.ProtocolVersion, out2.SessionID)
	}
	for _, w := range out2.Wire {
		if w.Status >= 300 || w.Sent != "" || w.Got != "" {
			t.Errorf("sdk2: %s %s: status %d, session sent %q, got %q; want 2xx and no session", w.HTTP, w.Method, w.Status, w.Sent, w.Got)
		}
	}

	// A write asks, in a 1.x session on process X, which opens its page.
	wr := runClient("sdk1", "write")
	pend := wr.Write.Structured
	if pend == nil || pend.Status != "awaiting_approval" || len(pend.Pending) != 1 || pend.Pending[0].Address != "writer.record" {
		t.Fatalf("J2 through nginx = %+v %q", pend, wr.Write.Text)
	}
	runID := pend.RunID
	x := byNode[mcpserver.NodeOf(*wr.SessionID)]
	// The browser (record_link.mjs) is started, not waited for.
	if got := waitLinks(t, x, testenv.Timeout(10*time.Second)); len(got) != 1 {
		t.Errorf("process %s, where the run asked, opened %d pages, want 1: %q", x.node, len(got), got)
	}
	if n := lines(t, writerCalls); n != 0 {
		t.Fatalf("writer called %d times before a decision", n)
	}

	// The agent comes back (2.x, spread by nginx) while nobody has decided:
	// still pending; each process that serves a resume opens its own page.
	var y *hubProc
	for i := 0; i < 6 && y == nil; i++ {
		r := runClient("sdk2", "resume", runID)
		if e := r.Resume.Structured; e == nil || e.Status != "awaiting_approval" {
			t.Fatalf("resume #%d before the decision = %+v %q", i+1, e, r.Resume.Text)
		}
		for wait := time.Now().Add(testenv.Timeout(2 * time.Second)); y == nil && time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
			for _, p := range procs {
				if p != x && len(pageLinks(t, p)) > 0 {
					y = p
					break
				}
			}
		}
	}
	if y == nil {
		t.Fatalf("six resumes through nginx opened no page on a process other than %s", x.node)
	}

	// The person decides in Y's page.
	link := pageLinks(t, y)[0]
	decideInPage(t, link, runID)

	// The decision wakes the hub: the run finishes before the agent comes
	// back, once, on one process.
	deadline := time.Now().Add(testenv.Timeout(20 * time.Second))
	for lines(t, writerCalls) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the run %s was not finished within %v of the decision in %s's page: no process was woken by it (hub.FinishDecided on the database's change feed)", runID, testenv.Timeout(20*time.Second), y.node)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The process that finished it says so once it has (after the write).
	finishers := func() []string {
		var who []string
		for _, p := range procs {
			for _, l := range strings.Split(p.stderr.String(), "\n") {
				if strings.Contains(l, "resumed a run a person decided") && strings.Contains(l, runID) {
					who = append(who, p.node)
				}
			}
		}
		return who
	}
	for len(finishers()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}

	// The agent's resume through nginx gets the finished envelope, from a
	// 1.x session and from the 2.x client alike, and calls nothing again.
	for _, sdk := range []string{"sdk1", "sdk2"} {
		r := runClient(sdk, "resume", runID)
		f := r.Resume.Structured
		if f == nil || f.Status != "completed" || string(f.Result) != `"recorded Echo: from the reader"` {
			t.Fatalf("%s: resume after the decision = %+v %q", sdk, f, r.Resume.Text)
		}
		type decision struct{ ID, Address, Choice, Channel string }
		var got []decision
		for _, d := range f.Decisions {
			got = append(got, decision(d))
		}
		if diff := cmp.Diff([]decision{{pend.Pending[0].ID, "writer.record", "once", "approval-page"}}, got); diff != "" {
			t.Errorf("%s: the final envelope's decisions (-want +got):\n%s", sdk, diff)
		}
		if strings.Contains(r.Resume.Text, link) || strings.Contains(r.Resume.Text, pageToken(t, link)) {
			t.Errorf("%s: the page's link reached the envelope", sdk)
		}
	}
	if n := lines(t, writerCalls); n != 1 {
		t.Errorf("writer called %d times, want 1", n)
	}
	if who := finishers(); len(who) != 1 {
		t.Errorf("processes that say they finished run %s: %v, want exactly one", runID, who)
	} else {
		t.Logf("run %s: asked on %s, decided in %s's page, finished on %s", runID, x.node, y.node, who[0])
	}
	// Four read-only tours and J2's two reads.
	if n := lines(t, readerCalls); n != 6 {
		t.Errorf("reader called %d times, want 6", n)
	}

	// A session no process holds: nginx sends it by its node (or round
	// robin when the node is not listed) and the process answers 404.
	for _, sid := range []string{"hub2.NOSUCHSESSION0000000000", "gone9.NOSUCHSESSION0000000000"} {
		code, body := rawPost(t, endpoint, token, sid)
		if code != http.StatusNotFound || !strings.Contains(body, "session not found") {
			t.Errorf("a request in session %s through nginx: HTTP %d %q, want 404 session not found", sid, code, body)
		}
	}

	// nginx's own record: every request of a session went to the process
	// its id names; the 2.x client's requests and the unknown node's went
	// to more than one.
	spread := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(ngx.AccessLog()), "\n") {
		f := accessLine.FindStringSubmatch(l)
		if f == nil {
			t.Errorf("nginx's access log line %q is not: method uri status \"upstream\" \"session\" \"protocol\"", l)
			continue
		}
		up, sid, proto := f[1], f[2], f[3]
		if p := byNode[mcpserver.NodeOf(sid)]; p != nil && up != p.addr() {
			t.Errorf("nginx sent a request of session %s to %s, not to %s (%s): %s", sid, up, p.addr(), p.node, l)
		}
		if proto == "2026-07-28" {
			spread[up] = true
		}
	}
	if len(spread) < 2 {
		t.Errorf("nginx sent every 2026-07-28 request to %v: round robin would spread them", spread)
	}

	// A session whose process is gone: nginx tries the process, is
	// refused, passes the request to a backup, which answers 404; the
	// client starts a new session (never a 502).
	if code, body := rawPost(t, endpoint, token, *wr.SessionID); code != 200 {
		t.Fatalf("a ping in %s's live session %s through nginx: HTTP %d %q", x.node, *wr.SessionID, code, body)
	}
	stopProc(t, x)
	logged := func() []string { return strings.Split(strings.TrimSpace(ngx.AccessLog()), "\n") }
	before := len(logged())
	if code, body := rawPost(t, endpoint, token, *wr.SessionID); code != http.StatusNotFound || !strings.Contains(body, "session not found") {
		t.Errorf("a ping in session %s after %s stopped: HTTP %d %q, want 404 session not found from another process", *wr.SessionID, x.node, code, body)
	}
	// nginx logs a request once it has answered it.
	for wait := time.Now().Add(testenv.Timeout(5 * time.Second)); len(logged()) == before && time.Now().Before(wait); {
		time.Sleep(20 * time.Millisecond)
	}
	last := logged()[len(logged())-1]
	if f := accessLine.FindStringSubmatch(last); f == nil || !strings.HasPrefix(f[1], x.addr()+", ") {
		t.Errorf("nginx's line for the request after %s stopped = %q, want %s tried first, then a backup", x.node, last, x.addr())
	}
}

// accessLine is a line of testenv.Nginx's access log: the upstreams tried,
// the session id and the protocol version sent.
var accessLine = regexp.MustCompile(`^\S+ \S+ \d+ "([^"]*)" "([^"]*)" "([^"]*)"$`)

// pageLinks returns the approval pages a process opened.
func pageLinks(t *testing.T, p *hubProc) []string {
	t.Helper()
	b, err := os.ReadFile(p.links)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// waitLinks returns the pages a process opened once it opened one, or none
// after wait.
func waitLinks(t *testing.T, p *hubProc, wait time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if l := pageLinks(t, p); len(l) > 0 || time.Now().After(deadline) {
			return l
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pageToken(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("the link %q is not a page with a one-time token", link)
	}
	return u.Query().Get("token")
}

// decideInPage does what the person does in the approval page, as its
// scripts do: open the link (a session cookie), read the session (its CSRF
// token) and the queue, decide the run's call once.
func decideInPage(t *testing.T, link, runID string) {
	t.Helper()
	pageToken(t, link)
	u, _ := url.Parse(link)
	origin := u.Scheme + "://" + u.Host
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path, cookie, csrf, body string, want int) []byte {
		t.Helper()
		target := origin + path
		if path == "" {
			target = link
		}
		req, err := http.NewRequest(method, target, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		if csrf != "" {
			req.Header.Set("X-CSRF-Token", csrf)
			req.Header.Set("Origin", origin)
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("the page: %s %s: HTTP %d, want %d: %s", method, path, resp.StatusCode, want, b)
		}
		if path == "" {
			cookie, _, _ = strings.Cut(resp.Header.Get("Set-Cookie"), ";")
			return []byte(cookie)
		}
		return b
	}
	cookie := string(do("GET", "", "", "", "", http.StatusSeeOther))
	if cookie == "" {
		t.Fatal("opening the page's link set no cookie")
	}
	var session struct{ CSRF string }
	if err := json.Unmarshal(do("GET", "/api/session", cookie, "", "", 200), &session); err != nil || session.CSRF == "" {
		t.Fatalf("the page's session has no CSRF token (%v)", err)
	}
	var queue struct{ Approvals []struct{ Run, ID string } }
	if err := json.Unmarshal(do("GET", "/api/approvals", cookie, "", "", 200), &queue); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(queue.Approvals, func(a struct{ Run, ID string }) bool { return a.Run == runID })
	if i < 0 {
		t.Fatalf("the page's queue has no call of %s: %+v", runID, queue.Approvals)
	}
	do("POST", "/api/approvals/"+runID+"/"+queue.Approvals[i].ID, cookie, session.CSRF, `{"choice":"once"}`, 200)
}

// rawPost sends a ping in session sid and returns the status and body.
func rawPost(t *testing.T, endpoint, token, sid string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady waits until a process's /readyz answers 200.
func waitReady(t *testing.T, p *hubProc) {
	t.Helper()
	wait := testenv.Timeout(30 * time.Second)
	deadline := time.Now().Add(wait)
	for {
		resp, err := http.Get("http://" + p.addr() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub serve --http --node %s was not ready on %s within %v\n%s", p.node, p.addr(), wait, p.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopProc drains a process (SIGTERM) and waits for it.
func stopProc(t *testing.T, p *hubProc) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(testenv.Timeout(10 * time.Second)):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
