package hub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// addGitHub adds GitHub's REST description (npm @octokit/openapi) as the
// source "github" and says how long Propose and Accept took.
func addGitHub(t testing.TB, h *hub.Hub) time.Duration {
	t.Helper()
	doc := testenv.LargeNPMPath(t, "@octokit/openapi/generated/api.github.com.json")
	ctx := context.Background()
	start := time.Now()
	p, err := h.Propose(ctx, hub.AddRequest{Document: doc, Namespace: "github"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// TestGitHubDescriptionSearch: with GitHub's REST description added
// (1,222 operations), search finds the operation for a plain request and
// describe gives its declaration.
func TestGitHubDescriptionSearch(t *testing.T) {
	h, _ := newOpenAPIHub(t)
	took := addGitHub(t, h)
	ctx := context.Background()
	res, err := h.Search(ctx, hub.SearchQuery{Text: "create an issue in a repository", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, hit := range res.Hits {
		got = append(got, hit.Address)
	}
	found := false
	for _, a := range got {
		found = found || a == "github.issuesCreate"
	}
	if !found {
		t.Errorf("search for creating an issue: %v, want github.issuesCreate among them", got)
	}
	decl, err := h.Describe(ctx, []string{"github.issuesCreate"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"issuesCreate(", "owner", "repo", "title"} {
		if !strings.Contains(decl, w) {
			t.Errorf("describe github.issuesCreate lacks %q:\n%s", w, decl)
		}
	}
	t.Logf("added in %v; search hits %v", took, got)
}

// BenchmarkGitHubDescription: adding GitHub's REST description (read,
// resolved, 1,222 tools proposed and stored), then search and describe of
// one tool over it.
func BenchmarkGitHubDescription(b *testing.B) {
	b.Run("add", func(b *testing.B) {
		for b.Loop() {
			h, _ := newOpenAPIHub(b)
			addGitHub(b, h)
			h.Close()
		}
	})
	h, _ := newOpenAPIHub(b)
	addGitHub(b, h)
	ctx := context.Background()
	if _, err := h.Search(ctx, hub.SearchQuery{Text: "warm"}); err != nil {
		b.Fatal(err)
	}
	b.Run("search", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.Search(ctx, hub.SearchQuery{Text: "list pull requests of a repository"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("describe", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.Describe(ctx, []string{"github.pullsList"}, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
