package index

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// evalQueries are intent queries as a person or a model phrases them, with
// the tools that answer them (any of them counts). They were written before
// tuning, from the tool list only, avoiding the tools' own words where a
// person would: "ticket" for issue, "picture" for screenshot, "outage" for
// incident.
type evalQuery struct {
	q    string
	want []string
}

var evalQueries = []evalQuery{
	{"open a ticket about a bug in our repo", []string{"github.createIssue", "github.issueWrite", "gitlab.createIssue", "linear.linearCreateIssue"}},
	{"send a message to the team channel", []string{"slack.slackPostMessage"}},
	{"reply in a slack thread", []string{"slack.slackReplyToThread"}},
	{"take a picture of the web page", []string{"puppeteer.puppeteerScreenshot"}},
	{"go to a website in the headless browser", []string{"puppeteer.puppeteerNavigate"}},
	{"type text into a form field", []string{"puppeteer.puppeteerFill"}},
	{"convert street address to latitude longitude", []string{"googlemaps.mapsGeocode"}},
	{"how do I drive from Paris to Lyon", []string{"googlemaps.mapsDirections"}},
	{"restaurants near me", []string{"brave.braveLocalSearch", "googlemaps.mapsSearchPlaces"}},
	{"search the internet for news", []string{"brave.braveWebSearch"}},
	{"run a SQL query against postgres", []string{"postgres.query"}},
	{"store a value under a key in the cache", []string{"redis.set"}},
	{"remove a key from redis", []string{"redis.delete"}},
	{"make a new folder", []string{"filesystem.createDirectory"}},
	{"show me what's in this directory", []string{"filesystem.listDirectory", "filesystem.listDirectoryWithSizes", "filesystem.directoryTree"}},
	{"save text to a file on disk", []string{"filesystem.writeFile"}},
	{"rename a file", []string{"filesystem.moveFile"}},
	{"read a png image from disk", []string{"filesystem.readMediaFile"}},
	{"remember that Alice works at Acme", []string{"memory.createEntities", "memory.addObservations"}},
	{"forget a fact about a person", []string{"memory.deleteObservations", "memory.deleteEntities"}},
	{"look up what the knowledge graph knows about Bob", []string{"memory.searchNodes", "memory.openNodes", "memory.readGraph"}},
	{"merge the pull request", []string{"github.mergePullRequest"}},
	{"open a PR from my branch", []string{"github.createPullRequest", "gitlab.createMergeRequest"}},
	{"who am I logged in as on GitHub", []string{"github.getMe"}},
	{"star a repo", []string{"github.starRepository"}},
	{"fork a repository into my account", []string{"github.forkRepository", "gitlab.forkRepository"}},
	{"list recent commits on main", []string{"github.listCommits"}},
	{"find code that calls a function across github", []string{"github.searchCode"}},
	{"security vulnerabilities found by dependabot", []string{"github.listDependabotAlerts", "github.getDependabotAlert"}},
	{"leaked credentials detected in a repo", []string{"github.listSecretScanningAlerts", "github.getSecretScanningAlert"}},
	{"create a new branch", []string{"github.createBranch", "gitlab.createBranch"}},
	{"tag a github issue with labels", []string{"github.updateIssueLabels", "github.issueWrite"}},
	{"close a github issue as completed", []string{"github.updateIssueState", "github.issueWrite"}},
	{"add a comment to an issue", []string{"github.addIssueComment", "linear.linearCreateComment"}},
	{"download the logs of a failed CI job", []string{"github.getJobLogs", "circleci.getBuildFailureLogs"}},
	{"why did my circleci build fail", []string{"circleci.getBuildFailureLogs"}},
	{"tests that fail intermittently", []string{"circleci.findFlakyTests"}},
	{"trigger a pipeline run", []string{"circleci.runPipeline", "github.actionsRunTrigger"}},
	{"roll back a deployment", []string{"circleci.runRollbackPipeline"}},
	{"is the latest pipeline green", []string{"circleci.getLatestPipelineStatus"}},
	{"silence alerts for a host during maintenance", []string{"datadog.muteHost", "datadog.scheduleDowntime"}},
	{"show production outages", []string{"datadog.listIncidents", "datadog.getIncident"}},
	{"cpu usage timeseries", []string{"datadog.queryMetrics"}},
	{"which monitors are alerting", []string{"datadog.getMonitors"}},
	{"distributed tracing spans for a service", []string{"datadog.listTraces"}},
	{"page load speed for real users", []string{"datadog.getRumPagePerformance"}},
	{"which Sentry organizations do I belong to", []string{"sentry.findOrganizations"}},
	{"exceptions happening in production", []string{"sentry.searchIssues", "sentry.searchEvents"}},
	{"ask AI for the root cause of an error", []string{"sentry.analyzeIssueWithSeer"}},
	{"get a DSN to configure the SDK", []string{"sentry.findDsns", "sentry.createDsn"}},
	{"create a notion page", []string{"notion.apiPostPage"}},
	{"append a paragraph to an existing notion page", []string{"notion.apiPatchBlockChildren"}},
	{"search my notion workspace", []string{"notion.apiPostSearch"}},
	{"query rows of a notion database with a filter", []string{"notion.apiQueryDataSource"}},
	{"list collections in a mongo database", []string{"mongodb.listCollections"}},
	{"insert documents into mongodb", []string{"mongodb.insertMany"}},
	{"delete a mongodb collection", []string{"mongodb.dropCollection"}},
	{"add an index on a field to speed up queries", []string{"mongodb.createIndex"}},
	{"how much disk space does the collection use", []string{"mongodb.collectionStorageSize", "mongodb.dbStats"}},
	{"assign an issue to a teammate in linear", []string{"linear.linearAssignIssue", "linear.linearUpdateIssue"}},
	{"current sprint in linear", []string{"linear.linearGetActiveCycle", "linear.linearGetCycles"}},
	{"set the urgency of a linear ticket", []string{"linear.linearSetIssuePriority"}},
	{"move an issue to another team", []string{"linear.linearTransferIssue"}},
	{"mark an issue as a duplicate", []string{"linear.linearDuplicateIssue"}},
	{"roadmap for the quarter", []string{"linear.linearGetRoadmaps"}},
	{"write release notes", []string{"linear.linearCreateReleaseNote"}},
	{"list the members of a team", []string{"linear.linearGetTeamMemberships", "github.getTeamMembers"}},
	{"think through a hard problem step by step", []string{"thinking.sequentialthinking"}},
	{"find files in google drive", []string{"gdrive.search"}},
	{"upload several files in one commit", []string{"github.pushFiles", "gitlab.pushFiles"}},
	{"unread notifications", []string{"github.listNotifications", "linear.linearGetUnreadNotificationCount", "linear.linearGetNotifications"}},
	{"react with an emoji to a slack message", []string{"slack.slackAddReaction"}},
	{"who wrote this line of code", []string{"github.getFileBlame"}},
	{"retry a failed workflow", []string{"circleci.rerunWorkflow"}},
	{"elevation of a mountain", []string{"googlemaps.mapsElevation"}},
	{"how long to travel between two cities", []string{"googlemaps.mapsDistanceMatrix", "googlemaps.mapsDirections"}},
	{"click a button on the page", []string{"puppeteer.puppeteerClick"}},
	{"run javascript in the browser", []string{"puppeteer.puppeteerEvaluate"}},
	{"delete a github repository", []string{"github.deleteRepository"}},
	{"share a code snippet as a gist", []string{"github.createGist"}},
}

// heldOutQueries were written after the ranking was tuned and never used
// to tune it: they measure how much of the gain carries over.
var heldOutQueries = []evalQuery{
	{"post an update in a slack channel", []string{"slack.slackPostMessage"}},
	{"get the profile of a slack user", []string{"slack.slackGetUserProfile"}},
	{"list all channels in the workspace", []string{"slack.slackListChannels"}},
	{"convert coordinates back to an address", []string{"googlemaps.mapsReverseGeocode"}},
	{"hover over a menu item", []string{"puppeteer.puppeteerHover"}},
	{"choose an option in a dropdown", []string{"puppeteer.puppeteerSelect"}},
	{"get the value stored at a key", []string{"redis.get"}},
	{"show all keys matching a pattern", []string{"redis.list"}},
	{"print the folder hierarchy as a tree", []string{"filesystem.directoryTree"}},
	{"get size and modification time of a file", []string{"filesystem.getFileInfo"}},
	{"list the releases of a repository", []string{"github.listReleases"}},
	{"request a review on my pull request", []string{"github.requestPullRequestReviewers", "github.requestCopilotReview"}},
	{"list open pull requests", []string{"github.listPullRequests", "github.searchPullRequests"}},
	{"archive a linear project", []string{"linear.linearArchiveProject"}},
	{"create a webhook for events", []string{"linear.linearCreateWebhook"}},
	{"see the change history of an issue", []string{"linear.linearGetIssueHistory"}},
	{"schedule a maintenance window for hosts", []string{"datadog.scheduleDowntime"}},
	{"search the log lines of a service", []string{"datadog.getLogs", "mongodb.mongodbLogs"}},
	{"count documents matching a filter", []string{"mongodb.count"}},
	{"explain a slow query plan", []string{"mongodb.explain"}},
	{"create a new sentry project", []string{"sentry.createProject"}},
	{"check the api rate limit", []string{"linear.linearGetRateLimitStatus"}},
}

// baseline is plain BM25 over name and description: one field, words split
// at non-alphanumerics only, no stemming, stop words or synonyms.
var baseline = params{
	k1:   1.2,
	w:    [numFields]float64{fName: 1, fDesc: 1},
	b:    [numFields]float64{fDesc: 0.75},
	flat: true,
}

// bm25f is the ranking without its second signal (the WordNet relatives).
var bm25f = func() params {
	p := tuned
	p.rel = [numKinds]float32{}
	return p
}()

type evalScore struct {
	n           int
	r1, r5, mrr float64
}

func (s evalScore) String() string {
	return fmt.Sprintf("recall@1 %.3f  recall@5 %.3f  MRR@10 %.3f  (%d queries)", s.r1, s.r5, s.mrr, s.n)
}

// evaluate ranks every query and scores the first correct tool's rank.
func evaluate(t testing.TB, ix *Index, verbose bool) evalScore {
	return evaluateOn(t, ix, evalQueries, verbose)
}

func evaluateOn(t testing.TB, ix *Index, queries []evalQuery, verbose bool) evalScore {
	t.Helper()
	var s evalScore
	for _, e := range queries {
		res, err := ix.Search(Query{Text: e.q, Limit: 10})
		if err != nil {
			t.Fatalf("searching %q: %v", e.q, err)
		}
		rank := 0
		for i, h := range res.Hits {
			if contains(e.want, h.Address) {
				rank = i + 1
				break
			}
		}
		if rank == 1 {
			s.r1++
		}
		if rank >= 1 && rank <= 5 {
			s.r5++
		}
		if rank > 0 {
			s.mrr += 1 / float64(rank)
		}
		if verbose && rank != 1 {
			var got []string
			for _, h := range res.Hits[:min(3, len(res.Hits))] {
				got = append(got, h.Address)
			}
			t.Logf("rank %d for %q (want %s); top: %s", rank, e.q, e.want[0], strings.Join(got, ", "))
		}
	}
	n := float64(max(len(queries), 1))
	return evalScore{len(queries), s.r1 / n, s.r5 / n, s.mrr / n}
}

// intents reads the held-out set of testdata/intents.txt and splits it:
// the 2nd, 4th, … query tune, the 1st, 3rd, … report.
func intents(t testing.TB) (tuneHalf, reportHalf []evalQuery) {
	t.Helper()
	f, err := os.Open("testdata/intents.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	i := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, want, ok := strings.Cut(line, "|")
		if !ok {
			t.Fatalf("intents.txt: %q has no | between query and tools", line)
		}
		e := evalQuery{q: strings.TrimSpace(q)}
		for _, w := range strings.Split(want, ",") {
			e.want = append(e.want, strings.TrimSpace(w))
		}
		if i%2 == 1 {
			tuneHalf = append(tuneHalf, e)
		} else {
			reportHalf = append(reportHalf, e)
		}
		i++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tuneHalf, reportHalf
}

// hard keeps the queries that share no term (after the analyzer: split,
// stop words dropped, stemmed) with the name or description of any of
// their right tools.
func hard(tools []model.Tool, queries []evalQuery) []evalQuery {
	an := newAnalyzer(true, true, true)
	byAddr := map[string]*model.Tool{}
	for i := range tools {
		byAddr[tools[i].Address] = &tools[i]
	}
	var out []evalQuery
	for _, e := range queries {
		words := map[string]bool{}
		for _, w := range e.want {
			if t := byAddr[w]; t != nil {
				an.each(t.Name+" "+t.Description, nil, func(term string) { words[term] = true })
			}
		}
		shared := false
		an.each(e.q, nil, func(term string) { shared = shared || words[term] })
		if !shared {
			out = append(out, e)
		}
	}
	return out
}

func TestSearchQuality(t *testing.T) {
	if len(evalQueries) < 60 {
		t.Fatalf("%d evaluation queries; keep at least 60", len(evalQueries))
	}
	tools := testenv.CorpusTools(t)
	ours := evaluate(t, build(tools, Options{}, tuned), testing.Verbose())
	base := evaluate(t, build(tools, Options{}, baseline), false)
	t.Logf("BM25F (ours):      %v", ours)
	t.Logf("BM25 (baseline):   %v", base)
	// What each part adds (each row adds to the one before).
	steps := []struct {
		name string
		p    params
	}{
		{"BM25, name+description, plain words", baseline},
		{"+ camelCase split, stop words, Snowball stems", func() params { p := baseline; p.analyze = tuned.analyze; return p }()},
		{"+ BM25F fields (name, title, description, params, namespace)", func() params { p := bm25f; p.syn, p.coord, p.join = 0, 0, false; return p }()},
		{"+ joined word pairs", func() params { p := bm25f; p.syn, p.coord = 0, 0; return p }()},
		{"+ synonym table", func() params { p := bm25f; p.coord = 0; return p }()},
		{"+ bonus for matching more query words", bm25f},
		{"+ WordNet relatives, weighted sum (ours)", tuned},
	}
	for _, s := range steps {
		t.Logf("%-62s %v", s.name, evaluate(t, build(tools, Options{}, s.p), false))
	}
	t.Logf("held out (%d queries), ours:     %v", len(heldOutQueries), evaluateOn(t, build(tools, Options{}, tuned), heldOutQueries, testing.Verbose()))
	t.Logf("held out (%d queries), baseline: %v", len(heldOutQueries), evaluateOn(t, build(tools, Options{}, baseline), heldOutQueries, false))
	if ours.mrr < base.mrr+0.10 {
		t.Errorf("MRR %.3f does not beat plain BM25 (%.3f) by 0.10", ours.mrr, base.mrr)
	}
}

var tune = flag.Bool("tune", false, "search the ranking parameters (TestTune)")

// TestTune reports the best parameters on a grid; run with -tune.
func TestTune(t *testing.T) {
	if !*tune {
		return
	}
	tools := testenv.CorpusTools(t)
	best, bestP := evalScore{}, tuned
	for _, wn := range []float64{1.5, 2, 3, 4} {
		for _, wt := range []float64{0.5, 1, 2} {
			for _, wp := range []float64{0.2, 0.4, 0.6, 1} {
				for _, wpd := range []float64{0.1, 0.3, 0.5} {
					for _, bd := range []float64{0.5, 0.75, 0.9} {
						for _, syn := range []float64{0.3, 0.5, 0.7} {
							for _, wns := range []float64{0.5, 1, 2} {
								p := tuned
								p.w[fName], p.w[fTitle], p.w[fParam], p.w[fParamDesc], p.w[fNamespace] = wn, wt, wp, wpd, wns
								p.b[fDesc] = bd
								p.syn = syn
								s := evaluate(t, build(tools, Options{}, p), false)
								if s.mrr > best.mrr {
									best, bestP = s, p
									t.Logf("%v: w=%v b=%v syn=%v", s, p.w, p.b, p.syn)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("best %v with %+v", best, bestP)
}

// TestHeldOutIntents checks the held-out set is what it claims (150
// queries or more, a third sharing no word with their right tools, every
// answer a tool of the corpus) and logs the scores of each slice.
func TestHeldOutIntents(t *testing.T) {
	tools := testenv.CorpusTools(t)
	tuneHalf, reportHalf := intents(t)
	all := append(append([]evalQuery(nil), tuneHalf...), reportHalf...)
	if len(all) < 150 {
		t.Errorf("%d held-out queries; keep at least 150", len(all))
	}
	if h := len(hard(tools, all)); 3*h < len(all) {
		t.Errorf("%d of %d held-out queries share no word with their right tools; keep at least a third", h, len(all))
	}
	known := map[string]bool{}
	for _, tl := range tools {
		known[tl.Address] = true
	}
	for _, e := range all {
		for _, w := range e.want {
			if !known[w] {
				t.Errorf("%q: %s is no tool of the corpus", e.q, w)
			}
		}
	}
	for _, s := range evalSlices(t, tools) {
		t.Logf("%-28s ours:  %v", s.name, evaluateOn(t, build(tools, Options{}, tuned), s.q, testing.Verbose() && s.verbose))
		t.Logf("%-28s BM25F: %v", "", evaluateOn(t, build(tools, Options{}, bm25f), s.q, false))
		t.Logf("%-28s BM25:  %v", "", evaluateOn(t, build(tools, Options{}, baseline), s.q, false))
	}
}

type slice struct {
	name    string
	q       []evalQuery
	verbose bool
}

// evalSlices are the query sets scores are reported on.
func evalSlices(t testing.TB, tools []model.Tool) []slice {
	tuneHalf, reportHalf := intents(t)
	return []slice{
		{"own (eval_test.go)", evalQueries, false},
		{"own, hard", hard(tools, evalQueries), false},
		{"held out, tune half", tuneHalf, true},
		{"held out, tune half, hard", hard(tools, tuneHalf), false},
		{"held out, report half", reportHalf, false},
		{"held out, report half, hard", hard(tools, reportHalf), false},
	}
}
