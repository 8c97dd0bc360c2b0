package hub_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// The secret: characters that URL-encoding and JSON escaping change.
const theSecret = `tok/3n+"quoted"&more%value`

// forms are the secret's encodings, computed with the standard library.
func forms(v string) map[string]string {
	j, _ := json.Marshal(v)
	return map[string]string{
		"raw":        v,
		"base64":     base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url":  base64.URLEncoding.EncodeToString([]byte(v)),
		"base64raw":  base64.RawStdEncoding.EncodeToString([]byte(v)),
		"query":      url.QueryEscape(v),
		"path":       url.PathEscape(v),
		"hex":        hex.EncodeToString([]byte(v)),
		"json":       strings.Trim(string(j), `"`),
		"HEX":        strings.ToUpper(hex.EncodeToString([]byte(v))),
		"base64urlr": base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for name, f := range forms(theSecret) {
		if strings.Contains(text, f) {
			t.Errorf("the secret (%s form) reached %s", name, where)
		}
	}
}

type fixture struct {
	h     *hub.Hub
	st    *store.File
	spy   *secret.Spy
	logs  *bytes.Buffer
	calls string
}

// storeDir is the store's folder once the records of the runs that just
// ended are written (a run's end is recorded after its envelope is
// returned), for a look at every file.
func (f *fixture) storeDir(t *testing.T) string {
	t.Helper()
	runs, err := f.h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	runs.Flush()
	return f.st.Dir()
}

// newFixture is a hub over a file store with one stdio source (the scripted
// upstream) that needs a credential in SCRIPTED_TOKEN and echoes it back.
func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureEnv(t, nil) }

// newFixtureEnv is newFixture with more environment for the upstream.
func newFixtureEnv(t testing.TB, extra map[string]string) *fixture {
	t.Helper()
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{st: st, spy: secret.NewSpy(secret.NewMemory(nil)), logs: &bytes.Buffer{}, calls: filepath.Join(t.TempDir(), "calls.jsonl")}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A run's wall time scales with the machine's load like every test
	// bound: the race detector on a busy machine takes its 90 s reading a
	// 5 MB handle (TestLargeResultIsAHandle).
	wall := int(testenv.Timeout(90 * time.Second).Milliseconds())
	f.h = hub.New(st, hub.Options{Logger: log, Secrets: f.spy, Sandbox: sandbox.Limits{WallMs: wall}})
	t.Cleanup(f.h.Close)
	argv := testenv.Scripted(t)
	env := map[string]string{"SCRIPTED_LEAK": "SCRIPTED_TOKEN", "SCRIPTED_CALLS": f.calls, "SCRIPTED_TOOLS": "4"}
	for k, v := range extra {
		env[k] = v
	}
	ctx := context.Background()
	p, err := f.h.Propose(ctx, hub.AddRequest{
		Command:   argv,
		Namespace: "leaky",
		SecretEnv: "SCRIPTED_TOKEN",
		Env:       env,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := f.h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Value: theSecret}); err != nil {
		t.Fatal(err)
	}
	f.spy.Reset()
	return f
}

// TestInvariantI1NoSecretReachesTheModel: an upstream that echoes its
// credential raw, base64, URL-encoded, inside JSON, as hex and in an error:
// after a run, the secret is in none of the envelope, the logs, the journal,
// the run record, the hub's own log, or any file under the hub directory.
func TestInvariantI1NoSecretReachesTheModel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `
const r = await leaky.leak({});
console.log("token:", r.token, JSON.stringify(r), btoa(r.token));
let err = null;
try { await leaky.leakError({}); } catch (e) { err = e.message; console.log(e.message); }
return { r, err };`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v", env.Status, env.Error)
	}
	if len(f.spy.Gets()) == 0 {
		t.Fatal("the credential was never read: the test proves nothing")
	}
	b, _ := json.Marshal(env)
	if !strings.Contains(string(b), "[secret]") {
		t.Fatalf("no [secret] marker in the envelope: was the secret echoed at all? %s", b)
	}
	assertNoSecret(t, "the envelope", string(b))
	assertNoSecret(t, "the hub's log", f.logs.String())
	// The hub writes in the background too (the prune's marker, spare
	// files): ReadFiles walks again past a file renamed away mid-walk.
	if err := testenv.ReadFiles(f.storeDir(t), func(p string, data []byte) { assertNoSecret(t, p, string(data)) }); err != nil {
		t.Fatal(err)
	}
	// hub call (the CLI's path) is scrubbed too.
	res, err := f.h.Call(ctx, "leaky.leak", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(res)
	assertNoSecret(t, "hub call's result", string(b))
}

// TestDeniedCallNeverTouchesCredential: policy first, then approval, then
// the secret: a denied call and a call awaiting approval read no credential.
func TestDeniedCallNeverTouchesCredential(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.h.SetRule(ctx, "leaky.record", policy.Deny, "", "test"); err != nil {
		t.Fatal(err)
	}
	env, err := f.h.Execute(ctx, `try { await leaky.record({item: "x"}) } catch (e) { return e.code }`)
	if err != nil {
		t.Fatal(err)
	}
	if string(env.Result) != `"policy_denied"` {
		t.Fatalf("denied call: %s %s", env.Status, env.Result)
	}
	if gets := f.spy.Gets(); len(gets) != 0 {
		t.Fatalf("a denied call read the credential: %v", gets)
	}
	if err := f.h.RemoveRule(ctx, "leaky.record", ""); err != nil {
		t.Fatal(err)
	}
	env, err = f.h.Execute(ctx, `return await leaky.record({item: "y"})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" {
		t.Fatalf("a write did not ask: %s", env.Status)
	}
	if gets := f.spy.Gets(); len(gets) != 0 {
		t.Fatalf("a call awaiting approval read the credential: %v", gets)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	env, err = f.h.Resume(ctx, env.RunID)
	if err != nil || env.Status != "completed" {
		t.Fatalf("resume: %v %+v", err, env)
	}
	if gets := f.spy.Gets(); len(gets) != 1 || gets[0] != "leaky/default" {
		t.Fatalf("after approval the credential was read %v, want once", gets)
	}
}

// TestInvariantI4UpstreamOnlyToReviewedHosts: an HTTP source talks only to
// the origin fixed at review; a redirect elsewhere is refused and the
// credential never crosses; the sandbox has no network and no filesystem.
func TestInvariantI4UpstreamOnlyToReviewedHosts(t *testing.T) {
	var leaked, reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("Authorization") != "" || strings.Contains(r.Header.Get("X-Token"), "tok") {
			leaked.Add(1)
		}
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	// The reviewed origin answers like an MCP server would not: it
	// redirects every request to another origin.
	reviewed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer reviewed.Close()

	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := model.Source{Namespace: "remote", Kind: model.KindHTTP, URL: reviewed.URL + "/mcp"}
	if err := st.Put(ctx, store.Sources, "remote", src); err != nil {
		t.Fatal(err)
	}
	m := hub.Manifest{Manifest: model.Manifest{Namespace: "remote", Protocol: "2025-11-25", Tools: model.NewTools("remote", []model.UpstreamTool{{Name: "echo"}})}, Health: "ok"}
	if err := st.Put(ctx, store.Manifests, "remote", m); err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	defer h.Close()
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "remote", Value: theSecret}); err != nil {
		t.Fatal(err)
	}
	_, err = h.Call(ctx, "remote.echo", nil, "")
	if err == nil || !strings.Contains(err.Error(), "outside the reviewed origin") {
		t.Fatalf("a redirect to another origin: %v; want it refused", err)
	}
	if leaked.Load() != 0 || reached.Load() != 0 {
		t.Fatalf("the other origin was reached %d times, %d with the credential", reached.Load(), leaked.Load())
	}
	assertNoSecret(t, "the error", err.Error())

	// The sandbox: no network, no filesystem.
	for _, code := range []string{
		`return await fetch("http://127.0.0.1:1/")`,
		`return typeof XMLHttpRequest === "undefined" ? null : new XMLHttpRequest()`,
		`const fs = require("fs"); return fs.readFileSync("/etc/passwd", "utf8")`,
		`return await import("/etc/passwd")`,
		`return std.loadFile("/etc/passwd")`,
		`return os.readdir("/")`,
	} {
		env, err := h.Execute(ctx, code)
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		b, _ := json.Marshal(env)
		if env.Status == "completed" && string(env.Result) != "null" || strings.Contains(string(b), "root:") {
			t.Errorf("%s: %s — the sandbox reached the network or the filesystem", code, b)
		}
	}
}

// TestInvariantI3AuthorityNeverWidensWithoutAPerson: a tool that is new, or
// changed since review, asks even under an allow rule; a rule pinned to the
// old contract stops applying; a renamed tool is a new tool.
func TestInvariantI3AuthorityNeverWidensWithoutAPerson(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	write := func(s string) {
		if err := os.WriteFile(state, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"tools": 4}`)
	st, _, err := store.Init(filepath.Join(dir, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{})
	defer h.Close()
	ctx := context.Background()
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "up", Command: testenv.Scripted(t), Env: map[string]string{"SCRIPTED_STATE": state}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	verdict := func(addr string) policy.Verdict {
		t.Helper()
		_, tl, _, err := h.Tool(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		v, err := h.Verdict(ctx, tl, "")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Not reviewed yet: even a read-only tool asks.
	if v := verdict("up.echo"); v.Action != policy.Ask || v.Reason != policy.ReasonNew {
		t.Fatalf("an unreviewed read-only tool: %+v", v)
	}
	r, _ := h.PendingReview(ctx, "")
	if err := h.AcceptReview(ctx, r, map[string]policy.Action{"up.record": policy.Allow}, "test"); err != nil {
		t.Fatal(err)
	}
	if v := verdict("up.record"); v.Action != policy.Allow {
		t.Fatalf("a write the person allowed: %+v", v)
	}
	// The upstream changes the tool and adds one: both ask.
	write(`{"tools": 5, "desc": " Also deletes everything."}`)
	if _, err := h.Refresh(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	if v := verdict("up.record"); v.Action != policy.Ask || v.Reason != policy.ReasonChanged || !strings.Contains(v.Message, "description") {
		t.Fatalf("a changed tool under an allow rule: %+v", v)
	}
	if v := verdict("up.tool4"); v.Action != policy.Ask || v.Reason != policy.ReasonNew {
		t.Fatalf("a new tool: %+v", v)
	}
	// Even after the person reviews the change, the allow pinned to the old
	// contract does not come back: the write asks.
	r, _ = h.PendingReview(ctx, "")
	if err := h.AcceptReview(ctx, r, map[string]policy.Action{"up.record": policy.Ask}, "test"); err != nil {
		t.Fatal(err)
	}
	if v := verdict("up.record"); v.Action != policy.Ask {
		t.Fatalf("after review with ask: %+v", v)
	}
}

// TestInvariantI7EveryChannelHasABudget: what reaches the model is bounded
// on every channel — search results, describe output, the code sent, the
// result and logs of a run, and the arguments shown to a person.
func TestInvariantI7EveryChannelHasABudget(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.h.Search(ctx, hub.SearchQuery{Text: "echo", Limit: 26}); err == nil {
		t.Error("search with limit 26 succeeded")
	}
	if _, err := f.h.Search(ctx, hub.SearchQuery{Text: strings.Repeat("a", 201)}); err == nil {
		t.Error("a 201-character query succeeded")
	}
	if res, err := f.h.Search(ctx, hub.SearchQuery{Text: "echo"}); err != nil || len(res.Hits) > 8 {
		t.Errorf("default search returned %d hits, %v", len(res.Hits), err)
	}
	out, err := f.h.Describe(ctx, []string{"leaky"}, 200)
	if err != nil {
		t.Fatal(err)
	}
	if n := typegen.Tokens(out); n > 200 || !strings.Contains(out, "left out") {
		t.Errorf("describe of 6 tools with a 200-token budget gave %d tokens and no note of what it left out", n)
	}
	if _, err := f.h.Execute(ctx, strings.Repeat(" ", 64<<10+1)); err == nil {
		t.Error("65 KB of code was accepted")
	}
	env, err := f.h.Execute(ctx, `for (let i = 0; i < 2000; i++) console.log("line " + i + " " + "x".repeat(50)); return "y".repeat(100000)`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(env)
	var handle struct {
		Handle  string
		Size    int
		Preview string
	}
	// The result too large for the envelope is a handle and a preview.
	if json.Unmarshal(env.Result, &handle) != nil || handle.Size != 100000 || handle.Handle == "" || env.Truncated == nil || !env.Truncated.Logs || len(b) > 40<<10 {
		t.Errorf("a 100 KB result with 2,000 log lines: envelope %d bytes, result %.100s, truncated %+v", len(b), env.Result, env.Truncated)
	}
	env, err = f.h.Execute(ctx, `return await leaky.record({item: "z".repeat(20000)})`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 || len(env.Pending[0].Args) > 4<<10+16 {
		t.Errorf("the arguments shown to a person are not capped: %d bytes", len(env.Pending[0].Args))
	}
}

// TestEveryStoredCredentialIsScrubbed: what one source answers is scrubbed
// of the credentials of every other source, though this process never
// called them (a file tool can read them back from where they are kept);
// a credential replaced by another process is scrubbed once the store's
// change is seen, and the one it replaced still is.
func TestEveryStoredCredentialIsScrubbed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// The other source reads a file (its arguments name the file: code
	// that passed the credential itself would be refused, I4).
	dir := t.TempDir()
	addReviewed(t, f.h, hub.AddRequest{Command: testenv.Filesystem(t, dir), Namespace: "fs"})
	echo := func(v string) string {
		t.Helper()
		file := filepath.Join(dir, "note.txt")
		if err := os.WriteFile(file, []byte("token: "+v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env, err := f.h.Execute(ctx, fmt.Sprintf(`return await fs.readTextFile({path: %q})`, file))
		if err != nil {
			t.Fatal(err)
		}
		if env.Status != "completed" {
			t.Fatalf("run %s: %+v", env.Status, env.Error)
		}
		return string(env.Result)
	}
	if got := echo(theSecret); strings.Contains(got, theSecret) || !strings.Contains(got, "[secret]") {
		t.Errorf("the answer of another source holds the stored credential: %s", got)
	}
	if gets := f.spy.Gets(); len(gets) != 1 || gets[0] != "leaky/default" {
		t.Errorf("the stored credentials were read %v, want leaky/default once", gets)
	}
	const replaced = "n3w-t0ken-from-another-terminal"
	if _, err := f.h.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Value: replaced}); err != nil {
		t.Fatal(err)
	}
	f.h.Invalidate() // what the serve loop's Watch does when the connection's record changes
	for _, v := range []string{replaced, theSecret} {
		if got := echo(v); strings.Contains(got, v) || !strings.Contains(got, "[secret]") {
			t.Errorf("after the credential was replaced, the answer holds %q: %s", v, got)
		}
	}
}

// TestInvariantI1PlainCredentialShapes: credentials given in plain text
// (`hub add --env`, an argument) that only their shape tells: the password
// of a DATABASE_URL, a *_PAT, the password of a --url argument. The server
// hands its whole environment and command line back: none of them reaches
// the execute result, while the URLs' hosts do. The same DATABASE_URL
// moved into the secret store (the source's one credential) is scrubbed
// whole, and its password written alone.
func TestInvariantI1PlainCredentialShapes(t *testing.T) {
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(st, hub.Options{Secrets: secret.NewMemory(nil)})
	t.Cleanup(h.Close)
	ctx := context.Background()
	const (
		dbPassword  = "Hunter2SuperSecretPw"
		pat         = "abcdEFGHijklMNOPqrst1234"
		argPassword = "Arg5ecretPassw0rd"
		moved       = "M0vedSecretPassw0rd"
	)
	addReviewed(t, h, hub.AddRequest{
		Command:   append(testenv.Scripted(t), "--url", "postgres://app:"+argPassword+"@args.internal/prod"),
		Namespace: "dbx",
		Env: map[string]string{
			"SCRIPTED_ENV": "1",
			"DATABASE_URL": "postgres://app:" + dbPassword + "@db.internal/prod",
			"GITHUB_PAT":   pat,
		},
	}, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "kept",
		// ALONE stands for a server that writes the password without the
		// rest of the URL: no rule tells it is a credential but the URL's.
		Env:       map[string]string{"SCRIPTED_ENV": "1", "SCRIPTED_REQUIRE": "DATABASE_URL", "ALONE": moved},
		SecretEnv: "DATABASE_URL",
		Secret:    "postgres://app:" + moved + "@vault.internal/prod",
	})
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "kept", Value: "postgres://app:" + moved + "@vault.internal/prod"}); err != nil {
		t.Fatal(err)
	}
	env, err := h.Execute(ctx, `
const d = await dbx.env({}), k = await kept.env({});
return [d.env.DATABASE_URL, d.env.GITHUB_PAT, d.argv.join(" "), k.env.DATABASE_URL, k.env.ALONE];`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v", env.Status, env.Error)
	}
	b, _ := json.Marshal(env)
	for _, v := range []string{dbPassword, pat, argPassword, moved} {
		for name, f := range forms(v) {
			if strings.Contains(string(b), f) {
				t.Errorf("%s (%s form) reached the envelope: %s", v, name, b)
			}
		}
	}
	var got []string
	if err := json.Unmarshal(env.Result, &got); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	want := []string{"postgres://app:[secret]@db.internal/prod", "[secret]", "--url postgres://app:[secret]@args.internal/prod", "[secret]", "[secret]"}
	if len(got) != len(want) {
		t.Fatalf("result %q, want %q", got, want)
	}
	for i := range want {
		if !strings.HasSuffix(got[i], want[i]) {
			t.Errorf("result[%d] = %q, want it to end in %q", i, got[i], want[i])
		}
	}
}

// TestInvariantI3DecisionsAreBoundToTheirConnection: a person's decision on
// a call through one connection (the default one, named or not) allows
// nothing through another of the source's credentials: not "run" for the
// rest of the run, not "always" (its rule names the connection).
func TestInvariantI3DecisionsAreBoundToTheirConnection(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.h.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Connection: "work", Value: "a-second-credential"}); err != nil {
		t.Fatal(err)
	}
	f.spy.Reset()
	decide := func(env *hub.Envelope, c model.Choice) *hub.Envelope {
		t.Helper()
		if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: c, Channel: approval.ChannelCLI}); err != nil {
			t.Fatal(err)
		}
		env, err := f.h.Resume(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	execute := func(code string) *hub.Envelope {
		t.Helper()
		env, err := f.h.Execute(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	waits := func(env *hub.Envelope, conn string) {
		t.Helper()
		if env.Status != "awaiting_approval" || len(env.Pending) != 1 || env.Pending[0].Connection != conn {
			t.Fatalf("want a call through %q waiting for a person, got %s %+v", conn, env.Status, env.Pending)
		}
	}

	// "run", given on the default connection's call: the call through work
	// later in the run still asks.
	env := execute(`await leaky.record({item: "a"}); return await leaky.record({item: "b"}, {connection: "work"})`)
	waits(env, "default")
	env = decide(env, model.ChoiceRun)
	waits(env, "work")
	env = decide(env, model.ChoiceDeny)
	if env.Status != "failed" || env.Error == nil || !strings.Contains(env.Error.Message, "approval_denied") {
		t.Fatalf("after deny: %s %+v", env.Status, env.Error)
	}

	// "always" on the default connection: a rule for that connection only.
	env = decide(execute(`return await leaky.record({item: "c"})`), model.ChoiceAlways)
	if env.Status != "completed" {
		t.Fatalf("after always: %s %+v", env.Status, env.Error)
	}
	pol, err := f.h.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Rules) != 1 || pol.Rules[0].Target != "leaky.record" || pol.Rules[0].Connection != "default" {
		t.Fatalf("the rule always recorded: %+v", pol.Rules)
	}
	waits(execute(`return await leaky.record({item: "d"}, {connection: "work"})`), "work")
	for _, code := range []string{`return await leaky.record({item: "e"})`, `return await leaky.record({item: "f"}, {connection: "default"})`} {
		if env := execute(code); env.Status != "completed" {
			t.Errorf("%s under the rule: %s %+v", code, env.Status, env.Pending)
		}
	}
	calls, err := os.ReadFile(f.calls)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{`"a"`, `"c"`, `"e"`, `"f"`} {
		if !strings.Contains(string(calls), item) {
			t.Errorf("the allowed call with item %s did not reach the upstream:\n%s", item, calls)
		}
	}
	for _, item := range []string{`"b"`, `"d"`} {
		if strings.Contains(string(calls), item) {
			t.Errorf("the call with item %s through work reached the upstream, no person allowed it:\n%s", item, calls)
		}
	}
}

// TestInvariantI3RunDecisionNamesTheToolVersion: "run" allows a tool for
// the rest of a run in the version the person saw: a tool changed upstream
// before the resume asks again, its first call included.
func TestInvariantI3RunDecisionNamesTheToolVersion(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(state, []byte(`{"tools": 4}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_STATE": state})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `await leaky.record({item: "a"}); return await leaky.record({item: "b"})`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("execute: %v %+v", err, env)
	}
	if err := os.WriteFile(state, []byte(`{"tools": 4, "desc": " Also wires money away."}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ch, err := f.h.Refresh(ctx, "leaky"); err != nil || len(ch) != 1 || len(ch[0].Changed) == 0 {
		t.Fatalf("refresh: %v %+v", err, ch)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceRun, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	env, err = f.h.Resume(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 || !strings.Contains(env.Pending[0].Message, "changed upstream") {
		t.Fatalf("after run on the old version: %s %+v, want the changed tool to ask", env.Status, env.Pending)
	}
	if calls, _ := os.ReadFile(f.calls); strings.Contains(string(calls), "record") {
		t.Fatalf("the changed tool ran under a decision made on its old version:\n%s", calls)
	}
}
