package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/index"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/policy"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/typegen"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEvalTokens is the offline eval of what the model pays (LH-16). It
// plays scripted multi-step tasks over the 19-source corpus twice and
// counts, with a real tokenizer (gpt-tokenizer, o200k_base), the tokens
// the model reads:
//
//   - code mode: the hub's fixed surface (three tool definitions and the
//     instructions), then its search and describe calls with their
//     answers (rendered by the index and typegen as the hub renders them),
//     then one execute call: the code, run for real in the sandbox against
//     fake upstreams, and the envelope the model gets back (its text line
//     and its structured content);
//   - direct tools: every tool definition of the 19 sources, as their
//     tools/list serves them, then each upstream call the code made and
//     its full result, as a client wired to the 19 servers would show them.
//
// The fake upstreams answer from the tools' schemas with realistic
// payloads (the fields the servers return, in their shapes). "once" counts
// each text once; "per turn" adds up what each model turn reads (the whole
// conversation so far), as an agent loop pays. Run it with
//
//	go test ./engine/mcpserver -run TestEvalTokens -v
func TestEvalTokens(t *testing.T) {
	ctx := context.Background()
	tools := testenv.CorpusTools(t)
	ft := newFakeUpstreams(tools)
	st, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Options{Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	eng := run.New(st, sb, ft, run.Options{})
	t.Cleanup(eng.Wait) // the automatic prune, before the store's folder goes

	surface := fixedSurface(t)
	direct := directDefinitions(t)
	type row struct {
		name                       string
		steps                      int
		codeOnce, directOnce       int
		codeTurns, directTurns     int
		codeSurface, directSurface int
	}
	var rows []row
	var texts []string
	type plan struct {
		task       evalTask
		codeTurns  []turn
		directTrns []turn
	}
	var plans []plan
	for _, task := range evalTasks {
		ft.reset()
		var ct []turn
		for _, q := range task.searches {
			res, err := ft.ix.Search(index.Query{Text: q, Limit: index.DefaultLimit})
			if err != nil {
				t.Fatal(err)
			}
			ct = append(ct, turn{call: toolCall("search", map[string]any{"query": q}), result: res.Text()})
		}
		for _, want := range task.describe {
			found := false
			for _, tr := range ct {
				found = found || strings.Contains(tr.result, want+"(")
			}
			if !found {
				t.Errorf("%s: the scripted searches never show %s; the model would not find it", task.name, want)
			}
		}
		d, err := ft.desc.Describe(task.describe, typegen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ct = append(ct, turn{call: toolCall("describe", map[string]any{"targets": task.describe}), result: d})
		env, err := eng.Execute(ctx, task.code)
		if err != nil {
			t.Fatal(err)
		}
		if env.Status != "completed" {
			t.Fatalf("%s: the code ended %s: %+v", task.name, env.Status, env.Error)
		}
		structured, _ := json.Marshal(env)
		ct = append(ct, turn{call: toolCall("execute", map[string]any{"code": task.code}), result: summary(env) + "\n" + string(structured)})
		var dt []turn
		for _, c := range ft.calls {
			var args any
			_ = json.Unmarshal(c.args, &args)
			dt = append(dt, turn{call: toolCall(c.name, args), result: string(c.result)})
		}
		if len(dt) != task.upstreamCalls {
			t.Errorf("%s: the code made %d upstream calls, want %d", task.name, len(dt), task.upstreamCalls)
		}
		plans = append(plans, plan{task, ct, dt})
		for _, tr := range append(ct, dt...) {
			texts = append(texts, tr.call, tr.result)
		}
	}
	texts = append(texts, surface, direct)
	counts := countTokens(t, texts)
	n := map[string]int{}
	for i, s := range texts {
		n[s] = counts[i]
	}
	for _, p := range plans {
		r := row{name: p.task.name, steps: len(p.directTrns), codeSurface: n[surface], directSurface: n[direct]}
		r.codeOnce, r.codeTurns = conversation(n, surface, p.codeTurns)
		r.directOnce, r.directTurns = conversation(n, direct, p.directTrns)
		rows = append(rows, r)
	}
	var sum row
	t.Logf("%-22s %5s %12s %12s %7s %14s %14s %7s", "task", "calls", "code, once", "direct, once", "fewer", "code, per turn", "direct, per turn", "fewer")
	for _, r := range rows {
		t.Logf("%-22s %5d %12d %12d %6.1f%% %14d %14d %6.1f%%", r.name, r.steps, r.codeOnce, r.directOnce, fewer(r.codeOnce, r.directOnce), r.codeTurns, r.directTurns, fewer(r.codeTurns, r.directTurns))
		sum.steps += r.steps
		sum.codeOnce += r.codeOnce
		sum.directOnce += r.directOnce
		sum.codeTurns += r.codeTurns
		sum.directTurns += r.directTurns
		if r.steps > 1 && fewer(r.codeOnce, r.directOnce) < 90 {
			t.Errorf("%s: code mode reads %d tokens, direct tools %d: %.1f%% fewer, the goal is 90%% on multi-step tasks", r.name, r.codeOnce, r.directOnce, fewer(r.codeOnce, r.directOnce))
		}
	}
	t.Logf("%-22s %5d %12d %12d %6.1f%% %14d %14d %6.1f%%", "total", sum.steps, sum.codeOnce, sum.directOnce, fewer(sum.codeOnce, sum.directOnce), sum.codeTurns, sum.directTurns, fewer(sum.codeTurns, sum.directTurns))
	t.Logf("fixed surface %d tokens; the 19 sources' %d tool definitions %d tokens", n[surface], len(tools), n[direct])
	for _, r := range rows {
		c, d := r.codeOnce-r.codeSurface, r.directOnce-r.directSurface
		t.Logf("%s, calls and results only (no definitions): code mode %d, direct %d (%.1f%% fewer)", r.name, c, d, fewer(c, d))
	}
	for _, p := range plans {
		var parts []string
		for _, tr := range p.codeTurns {
			parts = append(parts, fmt.Sprintf("%d+%d", n[tr.call], n[tr.result]))
		}
		var dparts []string
		for _, tr := range p.directTrns {
			dparts = append(dparts, fmt.Sprintf("%d+%d", n[tr.call], n[tr.result]))
		}
		t.Logf("%s: code mode calls+results %s; direct %s", p.task.name, strings.Join(parts, ", "), strings.Join(dparts, ", "))
	}
}

func fewer(a, b int) float64 { return 100 * (1 - float64(a)/float64(b)) }

// turn is one tool call the model writes and the result it reads.
type turn struct{ call, result string }

// conversation counts a transcript that starts with prefix: each text once,
// and what the model reads over its turns (each turn reads everything so
// far; one more turn reads the last result and answers).
func conversation(n map[string]int, prefix string, turns []turn) (once, perTurn int) {
	ctx := n[prefix]
	perTurn = ctx
	for _, tr := range turns {
		ctx += n[tr.call] + n[tr.result]
		perTurn += ctx
	}
	return ctx, perTurn
}

func toolCall(name string, args any) string {
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return string(b)
}

// fixedSurface is tools/list of the hub's three tools plus its
// instructions, as New declares them.
func fixedSurface(t *testing.T) string {
	yes, no := true, false
	defs := []*mcp.Tool{
		{Name: "search", Description: searchDescription, InputSchema: searchSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}},
		{Name: "describe", Description: describeDescription, InputSchema: describeSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}},
		{Name: "execute", Description: executeDescription, InputSchema: executeSchema, OutputSchema: envelopeSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &yes, OpenWorldHint: &yes}},
	}
	b, err := json.Marshal(map[string]any{"tools": defs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n" + instructions
}

// directDefinitions is every corpus server's tools/list, as served.
func directDefinitions(t *testing.T) string {
	files, err := filepath.Glob(filepath.Join(testenv.Corpus(t), "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatalf("compacting %s: %v", f, err)
		}
		b.Write(compact.Bytes())
		b.WriteByte('\n')
	}
	return b.String()
}

// countTokens counts each text with gpt-tokenizer's o200k_base encoding.
func countTokens(t *testing.T, texts []string) []int {
	t.Helper()
	testenv.NPMPath(t, "gpt-tokenizer")
	in, _ := json.Marshal(texts)
	cmd := exec.Command(testenv.Node(t), filepath.Join(testenv.Root(t), "testdata", "eval", "count-tokens.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("counting tokens: %v\n%s", err, stderr.String())
	}
	var counts []int
	if err := json.Unmarshal(out, &counts); err != nil || len(counts) != len(texts) {
		t.Fatalf("counting tokens: %v: %s", err, out)
	}
	return counts
}

// evalTask is one scripted task: what the model searches for and
// describes in code mode, and the code it then runs.
type evalTask struct {
	name          string
	searches      []string
	describe      []string
	code          string
	upstreamCalls int
}

var evalTasks = []evalTask{
	{
		name:     "issue to slack",
		searches: []string{"list the issues of a github repository", "post a message to a slack channel"},
		describe: []string{"github.listIssues", "slack.slackPostMessage"},
		code: `const { issues } = await github.listIssues({ owner: "acme", repo: "webapp", state: "OPEN", labels: ["bug"] });
const top = issues.reduce((a, b) => (b.comments > a.comments ? b : a));
const text = ` + "`" + `Most discussed open bug in acme/webapp: #${top.number} ${top.title} (${top.comments} comments, opened by ${top.user.login}). https://github.com/acme/webapp/issues/${top.number}` + "`" + `;
const posted = await slack.slackPostMessage({ channel_id: "C024BE91L", text });
return { issue: top.number, comments: top.comments, ts: posted.ts };`,
		upstreamCalls: 2,
	},
	{
		name:     "rows to tickets",
		searches: []string{"run a sql query on postgres", "create an issue in linear"},
		describe: []string{"postgres.query", "linear.linearCreateIssue"},
		code: `const rows = await postgres.query({ sql: "SELECT id, customer, subject, body, priority FROM support_requests WHERE status = 'open' ORDER BY created_at" });
const created = [];
for (const r of rows) {
  const issue = await linear.linearCreateIssue({ teamId: "6f2c1a9e-4b7d-4e0a-9c55-1d3b8f0e2a71", title: ` + "`" + `[${r.customer}] ${r.subject}` + "`" + `, description: r.body, priority: r.priority });
  created.push(issue.identifier);
}
return { created };`,
		upstreamCalls: 13,
	},
	{
		name:     "compare open PRs",
		searches: []string{"list open pull requests of a repository"},
		describe: []string{"github.listPullRequests"},
		code: `const summary = (prs) => ({
  open: prs.length,
  drafts: prs.filter((p) => p.draft).length,
  oldest: prs.reduce((x, y) => (x.created_at < y.created_at ? x : y)).number,
  linesChanged: prs.reduce((n, p) => n + p.additions + p.deletions, 0),
  authors: [...new Set(prs.map((p) => p.user.login))],
});
const web = summary(await github.listPullRequests({ owner: "acme", repo: "webapp", state: "open", perPage: 50 }));
const api = summary(await github.listPullRequests({ owner: "acme", repo: "api", state: "open", perPage: 50 }));
return { web, api, inBoth: web.authors.filter((a) => api.authors.includes(a)) };`,
		upstreamCalls: 2,
	},
	{
		name:          "geocode (one call)",
		searches:      []string{"latitude and longitude of an address"},
		describe:      []string{"googlemaps.mapsGeocode"},
		code:          `return await googlemaps.mapsGeocode({ address: "1600 Amphitheatre Parkway, Mountain View, CA" });`,
		upstreamCalls: 1,
	},
}

// fakeUpstreams answers the sandbox's calls for the corpus: run.Tools
// over the 19 manifests, every call allowed, each tool answering from a
// payload generator in the shape its server returns.
type fakeUpstreams struct {
	tools map[string]*model.Tool
	ns    *sandbox.Namespaces
	ix    *index.Index
	desc  *typegen.Describer
	mu    sync.Mutex
	calls []upstreamCall
	rng   *rand.Rand
}

type upstreamCall struct {
	name   string
	args   json.RawMessage
	result json.RawMessage
}

func newFakeUpstreams(tools []model.Tool) *fakeUpstreams {
	f := &fakeUpstreams{tools: map[string]*model.Tool{}, ix: index.New(tools, index.Options{}), desc: typegen.NewDescriber(tools)}
	m := map[string][]string{}
	for i := range tools {
		t := &tools[i]
		f.tools[t.Address] = t
		ns, name, _ := model.SplitAddress(t.Address)
		m[ns] = append(m[ns], name)
	}
	f.ns = sandbox.NewNamespaces(m)
	f.reset()
	return f
}

func (f *fakeUpstreams) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
	f.rng = rand.New(rand.NewPCG(17, 16))
}

func (f *fakeUpstreams) Namespaces(context.Context) (*sandbox.Namespaces, error) { return f.ns, nil }

func (f *fakeUpstreams) Tool(_ context.Context, address string) (*model.Tool, error) {
	t := f.tools[address]
	if t == nil {
		return nil, fmt.Errorf("looking up %s: no such tool", address)
	}
	return t, nil
}

func (f *fakeUpstreams) Verdict(context.Context, *model.Tool, string) (policy.Verdict, error) {
	return policy.Verdict{Action: policy.Allow, Reason: "eval", Message: "the eval allows every call"}, nil
}

func (f *fakeUpstreams) Check(context.Context, *model.Tool, string, json.RawMessage) *model.ToolError {
	return nil
}

func (f *fakeUpstreams) Call(_ context.Context, t *model.Tool, _ string, args json.RawMessage) (json.RawMessage, *model.ToolError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	gen := payloads[t.Address]
	if gen == nil {
		return nil, &model.ToolError{Code: "upstream_error", Message: "the eval has no payload for " + t.Address}
	}
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	res, err := json.Marshal(gen(f.rng, a))
	if err != nil {
		return nil, &model.ToolError{Code: "upstream_error", Message: err.Error()}
	}
	if t.Address == "postgres.query" { // the reference server pretty-prints its rows
		var b bytes.Buffer
		_ = json.Indent(&b, res, "", "  ")
		res = b.Bytes()
	}
	f.calls = append(f.calls, upstreamCall{name: t.Name, args: args, result: res})
	return res, nil
}

func (f *fakeUpstreams) Search(_ context.Context, q string) (string, error) {
	res, err := f.ix.Search(index.Query{Text: q})
	if err != nil {
		return "", err
	}
	return res.Text(), nil
}

func (f *fakeUpstreams) Describe(_ context.Context, target string) (string, error) {
	return f.desc.Describe([]string{target}, typegen.Options{})
}

func (f *fakeUpstreams) ConnectionReady(context.Context, string, string) bool { return true }

func (f *fakeUpstreams) Scrubber(context.Context, []model.JournalEntry) *scrub.Scrubber {
	return scrub.New()
}

// payloads make each tool's answer, in the fields and shapes its server
// returns (GitHub's MCP server: the fields its list tools enumerate;
// Slack's chat.postMessage; the Postgres reference server's rows; Linear's
// output schema; Google's geocoder as the Maps server trims it).
var payloads = map[string]func(r *rand.Rand, args map[string]any) any{
	"github.listIssues": func(r *rand.Rand, args map[string]any) any {
		var issues []any
		for i := range 30 {
			n := 4100 - 7*i
			issues = append(issues, map[string]any{
				"number": n, "title": pick(r, issueTitles), "body": paragraph(r, 3+r.IntN(4)), "state": "OPEN",
				"user": map[string]any{"login": pick(r, logins)}, "labels": []string{"bug", pick(r, areas)},
				"assignees": []string{pick(r, logins)}, "comments": r.IntN(24),
				"created_at": date(r, 2026, 9), "updated_at": date(r, 2026, 11),
			})
		}
		return map[string]any{"issues": issues, "pageInfo": map[string]any{"hasNextPage": true, "hasPreviousPage": false, "startCursor": "Y3Vyc29yOnYyOpHOAAE3kw==", "endCursor": "Y3Vyc29yOnYyOpHOAAE5Yg=="}, "totalCount": 87}
	},
	"slack.slackPostMessage": func(r *rand.Rand, args map[string]any) any {
		text, _ := args["text"].(string)
		ts := fmt.Sprintf("1764590%03d.%06d", r.IntN(1000), r.IntN(1000000))
		return map[string]any{
			"ok": true, "channel": args["channel_id"], "ts": ts,
			"message": map[string]any{
				"user": "U07QK2N4D1S", "type": "message", "ts": ts, "bot_id": "B07QK2N3V8Q", "app_id": "A07Q9L0F2BM", "text": text, "team": "T024BE7LD",
				"bot_profile": map[string]any{"id": "B07QK2N3V8Q", "deleted": false, "name": "capabilities", "updated": 1764500112, "app_id": "A07Q9L0F2BM",
					"icons": map[string]any{"image_36": "https://a.slack-edge.com/80588/img/plugins/app/bot_36.png", "image_48": "https://a.slack-edge.com/80588/img/plugins/app/bot_48.png", "image_72": "https://a.slack-edge.com/80588/img/plugins/app/service_72.png"}, "team_id": "T024BE7LD"},
				"blocks": []any{map[string]any{"type": "rich_text", "block_id": "Xq2aF", "elements": []any{map[string]any{"type": "rich_text_section", "elements": []any{map[string]any{"type": "text", "text": text}}}}}},
			},
			"warning": "missing_charset", "response_metadata": map[string]any{"warnings": []string{"missing_charset"}},
		}
	},
	"postgres.query": func(r *rand.Rand, args map[string]any) any {
		var rows []any
		for i := range 12 {
			rows = append(rows, map[string]any{
				"id": 5120 + 3*i, "customer": pick(r, customers), "subject": pick(r, subjects),
				"body": paragraph(r, 2+r.IntN(3)), "priority": 1 + r.IntN(4),
			})
		}
		return rows
	},
	"linear.linearCreateIssue": func(r *rand.Rand, args map[string]any) any {
		title, _ := args["title"].(string)
		n := 900 + r.IntN(100)
		return map[string]any{
			"id":         fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1)),
			"identifier": fmt.Sprintf("SUP-%d", n), "title": title,
			"url": fmt.Sprintf("https://linear.app/acme/issue/SUP-%d/%s", n, slug(title)),
		}
	},
	"github.listPullRequests": func(r *rand.Rand, args map[string]any) any {
		repo, _ := args["repo"].(string)
		var prs []any
		for i := range 22 {
			n := 2300 - 9*i
			branch := fmt.Sprintf("%s/%s", pick(r, logins), slug(pick(r, issueTitles)))
			prs = append(prs, map[string]any{
				"number": n, "title": pick(r, issueTitles), "body": paragraph(r, 2+r.IntN(4)), "state": "open", "draft": r.IntN(5) == 0,
				"merged": false, "mergeable_state": pick(r, []string{"clean", "blocked", "behind", "unstable"}),
				"html_url": fmt.Sprintf("https://github.com/acme/%s/pull/%d", repo, n), "user": map[string]any{"login": pick(r, logins)},
				"labels": []string{pick(r, areas)}, "assignees": []string{}, "requested_reviewers": []string{pick(r, logins)},
				"head":      map[string]any{"ref": branch, "sha": sha(r), "label": "acme:" + branch},
				"base":      map[string]any{"ref": "main", "sha": sha(r), "label": "acme:main"},
				"additions": r.IntN(900), "deletions": r.IntN(400), "changed_files": 1 + r.IntN(30), "commits": 1 + r.IntN(12),
				"comments": r.IntN(15), "created_at": date(r, 2026, 8), "updated_at": date(r, 2026, 11),
			})
		}
		return prs
	},
	"googlemaps.mapsGeocode": func(r *rand.Rand, args map[string]any) any {
		return map[string]any{
			"location":          map[string]any{"lat": 37.4224428, "lng": -122.0842467},
			"formatted_address": "Google Building 40, 1600 Amphitheatre Pkwy, Mountain View, CA 94043, USA",
			"place_id":          "ChIJj38IfwK6j4ARNcyPDnEGa9g",
		}
	},
}

var (
	logins      = []string{"mhernandez", "priya-k", "tomasz", "lena-ops", "dkim", "ana-s", "jbauer", "oyelaran"}
	areas       = []string{"frontend", "api", "auth", "billing", "infra", "mobile"}
	customers   = []string{"Northwind", "Globex", "Initech", "Umbrella Health", "Stark Logistics", "Wayne Retail"}
	issueTitles = []string{
		"Login page hangs after password reset", "Export to CSV drops the last row", "Dark mode toggles back on reload",
		"Search results flicker while typing", "Webhook retries never back off", "Timezone shown as UTC in invoices",
		"Session expires during long uploads", "Dropdown closes when scrolling on Safari", "Rate limiter counts preflight requests",
		"Memory grows when the dashboard stays open", "Broken link in the onboarding email", "Pagination skips items on page two",
	}
	subjects = []string{
		"Cannot download last month's invoice", "SSO login loops back to the start page", "Data export is missing columns",
		"Users see another team's dashboard", "Webhook stopped firing on Friday", "Bulk import fails at row 2,000",
		"Report totals differ from the API", "Password reset email never arrives",
	}
	words = strings.Fields(`the request fails when a user opens the page after the session was refreshed and we see a timeout in the logs
		steps to reproduce open the settings click save wait for the spinner then reload expected the change is kept actual it is lost
		this started after the last deploy and affects about a third of sessions on mobile the console shows an unhandled promise rejection
		customers report it mostly in the morning when traffic peaks our metrics show p95 latency doubling for the affected endpoint`)
)

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

func paragraph(r *rand.Rand, sentences int) string {
	var b strings.Builder
	for s := range sentences {
		if s > 0 {
			b.WriteString(" ")
		}
		n := 10 + r.IntN(14)
		start := r.IntN(len(words) - n)
		sent := strings.Join(words[start:start+n], " ")
		b.WriteString(strings.ToUpper(sent[:1]) + sent[1:] + ".")
	}
	return b.String()
}

func date(r *rand.Rand, year, month int) string {
	return fmt.Sprintf("%d-%02d-%02dT%02d:%02d:%02dZ", year, month, 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
}

func sha(r *rand.Rand) string {
	return fmt.Sprintf("%016x%016x%08x", r.Uint64(), r.Uint64(), r.Uint32())
}

func slug(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return c
		}
		return '-'
	}, s)
	return strings.Trim(s, "-")
}
