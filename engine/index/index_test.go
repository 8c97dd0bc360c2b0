package index

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

func yes() *bool { b := true; return &b }

func testTools() []model.Tool {
	gh := model.NewTools("github", []model.UpstreamTool{
		{Name: "create_issue", Description: "Create an issue in a repository. Needs push access.", InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"},"body":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}}},"required":["owner","repo","title"]}`)},
		{Name: "list_issues", Description: "List issues in a repository.", InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"}},"required":["owner","repo"]}`), Annotations: &model.Annotations{ReadOnlyHint: yes()}},
		{Name: "delete_repository", Description: "Delete a repository.", InputSchema: json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"}},"required":["owner","repo"]}`)},
	})
	lin := model.NewTools("linear", []model.UpstreamTool{
		{Name: "linear_createIssue", Description: "Create a new issue in Linear", InputSchema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"teamId":{"type":"string"}},"required":["title","teamId"]}`)},
	})
	return append(gh, lin...)
}

func TestSearchText(t *testing.T) {
	ix := New(testTools(), Options{
		Connections: func(ns string) ([]string, string) {
			if ns == "github" {
				return []string{"personal", "work"}, "personal"
			}
			return nil, ""
		},
	})
	res, err := ix.Search(Query{Text: "open a github ticket", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := `github  (connections: personal*, work)
  github.createIssue(input: { owner: string; repo: string; title: string; body?: string; labels?: string[] }): Promise<unknown>   [asks]
    Create an issue in a repository.
linear
  linear.linearCreateIssue(input: { title: string; teamId: string }): Promise<unknown>   [asks]
    Create a new issue in Linear
2 more matches. Narrow the query or pass namespace.
`
	if diff := cmp.Diff(want, res.Text()); diff != "" {
		t.Errorf("Text() (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"results":[{"address":"github.createIssue","signature":"github.createIssue(input: { owner: string; repo: string; title: string; body?: string; labels?: string[] }): Promise\u003cunknown\u003e","description":"Create an issue in a repository.","asks":true},{"address":"linear.linearCreateIssue","signature":"linear.linearCreateIssue(input: { title: string; teamId: string }): Promise\u003cunknown\u003e","description":"Create a new issue in Linear","asks":true}],"more":2,"hidden":0}`
	if diff := cmp.Diff(wantJSON, string(b)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func TestSearchPolicy(t *testing.T) {
	ix := New(testTools(), Options{
		Hidden: func(t *model.Tool) bool { return t.Address == "github.deleteRepository" },
		Asks:   func(t *model.Tool) bool { return t.Address == "github.listIssues" },
	})
	res, err := ix.Search(Query{Text: "repository"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Address)
		if h.Asks != (h.Address == "github.listIssues") {
			t.Errorf("%s: asks = %v", h.Address, h.Asks)
		}
	}
	if diff := cmp.Diff([]string{"github.createIssue", "github.listIssues"}, got, cmpSorted); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	if res.Hidden != 1 || !strings.Contains(res.Text(), "1 more matches are hidden: policy denies them.") {
		t.Errorf("hidden = %d, text:\n%s", res.Hidden, res.Text())
	}
	// Default policy: read-only runs, everything else asks.
	res, _ = New(testTools(), Options{}).Search(Query{Namespace: "github"})
	asks := map[string]bool{}
	for _, h := range res.Hits {
		asks[h.Address] = h.Asks
	}
	if diff := cmp.Diff(map[string]bool{"github.createIssue": true, "github.listIssues": false, "github.deleteRepository": true}, asks); diff != "" {
		t.Errorf("default asks (-want +got):\n%s", diff)
	}
}

var cmpSorted = cmp.Transformer("sort", func(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

func TestSearchListNamespace(t *testing.T) {
	ix := New(testTools(), Options{})
	res, err := ix.Search(Query{Namespace: "github", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range res.Hits {
		got = append(got, h.Address)
	}
	if diff := cmp.Diff([]string{"github.createIssue", "github.listIssues"}, got); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	if res.More != 1 {
		t.Errorf("more = %d, want 1", res.More)
	}
	res, _ = ix.Search(Query{Text: "zebra qwzx"})
	if want := `No tools match "zebra qwzx". Try other words for what the tool does. Namespaces: github, linear.` + "\n"; res.Text() != want {
		t.Errorf("no match text = %q, want %q", res.Text(), want)
	}
}

func TestSearchBadInput(t *testing.T) {
	ix := New(testTools(), Options{})
	tests := []struct {
		q    Query
		want string
	}{
		{Query{}, "query is empty: say what the tool should do (1 to 200 characters), or pass a namespace to list its tools"},
		{Query{Text: "   "}, "query is empty: say what the tool should do (1 to 200 characters), or pass a namespace to list its tools"},
		{Query{Text: strings.Repeat("é", 201)}, "query is 201 characters long; the limit is 200: shorten it to the words that say what the tool does"},
		{Query{Text: "issue", Limit: -1}, "limit -1 is out of range: pass 1 to 25 (default 8)"},
		{Query{Text: "issue", Limit: 26}, "limit 26 is out of range: pass 1 to 25 (default 8)"},
		{Query{Text: "issue", Namespace: "gitlab"}, `unknown namespace "gitlab": the namespaces are github, linear`},
	}
	for _, tt := range tests {
		_, err := ix.Search(tt.q)
		if err == nil {
			t.Errorf("Search(%+v) = nil error, want %q", tt.q, tt.want)
			continue
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("Search(%+v) (-want +got):\n%s", tt.q, diff)
		}
	}
	for _, q := range []Query{{Text: strings.Repeat("x", 200)}, {Text: "issue", Limit: 25}, {Text: "issue", Limit: 1}, {Text: "a"}} {
		if _, err := ix.Search(q); err != nil {
			t.Errorf("Search(%q, limit %d): %v", q.Text[:min(len(q.Text), 10)], q.Limit, err)
		}
	}
}

func TestAnalyzer(t *testing.T) {
	an := newAnalyzer(true, true, true)
	tests := map[string][]string{
		"linear_getViewer":        {"linear", "get", "viewer"},
		"API-post-search":         {"api", "post", "search"},
		"getHTTPResponse2xx":      {"get", "http", "respons", "2", "xx"},
		"Create the issues, fast": {"creat", "issu", "fast"},
		"":                        nil,
	}
	for in, want := range tests {
		var got []string
		an.each(in, nil, func(t string) { got = append(got, t) })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("terms of %q (-want +got):\n%s", in, diff)
		}
	}
}

func TestEachParam(t *testing.T) {
	schema := `{"type":"object","description":"top","properties":{"owner":{"type":"string","description":"Repository \"owner\""},
	"files":{"type":"array","items":{"type":"object","properties":{"path":{"description":"File path","enum":["a",{"x":[1,2]}]}}}},
	"deep":{"properties":{"a":{"properties":{"b":{"properties":{"c":{}}}}}}}},"required":["owner"]}`
	got := map[string]string{}
	eachParam([]byte(schema), func(name, desc string) { got[name] = desc })
	want := map[string]string{"owner": `Repository "owner"`, "files": "", "path": "File path", "deep": "", "a": "", "b": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	for _, bad := range []string{``, `[`, `{"properties":{"a":`, `{"properties":[1]}`, `"x"`, `{"properties":{"a":{"description":7}}}`} {
		eachParam([]byte(bad), func(string, string) {})
	}
}

// TestConcurrentSearch runs searches from several goroutines (run with -race).
func TestConcurrentSearch(t *testing.T) {
	ix := New(testenv.CorpusTools(t), Options{})
	done := make(chan bool)
	for g := range 4 {
		go func() {
			defer func() { done <- true }()
			for i, e := range evalQueries {
				if i%4 == g {
					continue
				}
				if _, err := ix.Search(Query{Text: e.q + " zzunseen" + string(rune('a'+i%26))}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
