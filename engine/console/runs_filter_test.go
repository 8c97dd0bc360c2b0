package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestRunsScreenFilters: GET /api/runs takes the filters of `hub runs` —
// status, since (an age or an RFC 3339 time) and namespace (runs whose
// journal calls a tool of it) — and keeps exactly the matching runs,
// newest first; a filter that is not one, a status that is not one, an age
// that does not read and a namespace the hub does not have are refused
// with 400 and a message saying what to send.
func TestRunsScreenFilters(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	exec := func(code, status string) string {
		t.Helper()
		env, err := f.h.Execute(ctx, code)
		if err != nil || env.Status != status {
			t.Fatalf("execute %q: %+v, %v; want %s", code, env, err, status)
		}
		return env.RunID
	}
	read := exec(`return await up.echo({message: "hi"})`, "completed")
	write := exec(`return await up.record({item: "x"})`, "awaiting_approval")
	none := exec(`return 1`, "completed")
	// An old run: started 10 days ago.
	old := exec(`return await up.echo({message: "old"})`, "completed")
	r := f.run(t, old)
	r.CreatedAt = time.Now().Add(-10 * 24 * time.Hour)
	if err := f.st.Put(ctx, store.Runs, old, r); err != nil {
		t.Fatal(err)
	}

	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	_, cookie, _ := p.login()
	list := func(query string) []string {
		t.Helper()
		ids, _ := listMore(t, p, cookie, query)
		return ids
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{none, write, read, old}},
		{"?status=completed", []string{none, read, old}},
		{"?status=awaiting_approval", []string{write}},
		{"?namespace=up", []string{write, read, old}},
		{"?since=7d", []string{none, write, read}},
		{"?since=7d&namespace=up&status=completed", []string{read}},
		{"?since=" + time.Now().Add(time.Hour).UTC().Format(time.RFC3339), []string{}},
	} {
		if diff := cmp.Diff(tc.want, list(tc.query)); diff != "" {
			t.Errorf("GET /api/runs%s (-want +got):\n%s", tc.query, diff)
		}
	}
	// limit: the newest that match, and "more" when older ones are left out.
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"?limit=2", []string{none, write}, true},
		{"?limit=4", []string{none, write, read, old}, false},
		{"?limit=0", []string{none, write, read, old}, false},
		{"?status=completed&limit=2", []string{none, read}, true},
		{"?since=7d&limit=3", []string{none, write, read}, false},
	} {
		ids, more := listMore(t, p, cookie, tc.query)
		if diff := cmp.Diff(tc.want, ids); diff != "" || more != tc.more {
			t.Errorf("GET /api/runs%s: more %v, want %v; runs (-want +got):\n%s", tc.query, more, tc.more, diff)
		}
	}
	for query, want := range map[string]string{
		"?limit=-1":          `limit \"-1\": write how many runs to list`,
		"?limit=ten":         `limit \"ten\": write how many runs to list`,
		"?limit=1&limit=2":   `limit \"1,2\"`,
		"?status=done":       `status \"done\" is not a status`,
		"?since=yesterday":   `since \"yesterday\": write an age`,
		"?namespace=ghost":   `unknown namespace \"ghost\"`,
		"?namespace=a%2Fb":   `namespace \"a/b\" is not a namespace`,
		"?owner=me":          `unknown filter \"owner\"`,
		"?status=expired&x=": `unknown filter \"x\"`,
	} {
		w := p.send(request{method: http.MethodGet, target: "/api/runs" + query, cookie: cookie})
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET /api/runs%s: %d %s; want 400 saying %s", query, w.Code, w.Body, want)
		}
	}
}

// TestRunsWaitOnlyWhilePaused: a run says it waits for a person only while
// it can still be decided; once cancelled (or expired) its undecided call
// waits for nobody, in the list and in the run's details alike.
func TestRunsWaitOnlyWhilePaused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	live := f.pending(t, `return await up.record({item: "live"})`)
	gone := f.pending(t, `return await up.record({item: "gone"})`)
	eng, err := f.h.Runs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Cancel(ctx, gone); err != nil {
		t.Fatal(err)
	}
	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	_, cookie, _ := p.login()
	get := func(target string, v any) {
		t.Helper()
		w := p.send(request{method: http.MethodGet, target: target, cookie: cookie})
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), v) != nil {
			t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
		}
	}
	var list console.Runs
	get("/api/runs", &list)
	got := map[string]string{}
	for _, r := range list.Runs {
		got[r.ID] = fmt.Sprintf("%s, %d waiting", r.Status, r.Waiting)
	}
	for _, id := range []string{live, gone} {
		var d console.RunDetail
		get("/api/runs/"+id, &d)
		got[id+" details"] = fmt.Sprintf("%s, %d waiting", d.Run.Status, d.Run.Waiting)
	}
	want := map[string]string{
		live: "awaiting_approval, 1 waiting", live + " details": "awaiting_approval, 1 waiting",
		gone: "cancelled, 0 waiting", gone + " details": "cancelled, 0 waiting",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
}

// listMore is GET /api/runs with query: the runs' ids, and "more".
func listMore(t *testing.T, p *page, cookie *http.Cookie, query string) ([]string, bool) {
	t.Helper()
	w := p.send(request{method: http.MethodGet, target: "/api/runs" + query, cookie: cookie})
	var out console.Runs
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil {
		t.Fatalf("GET /api/runs%s: %d %s", query, w.Code, w.Body)
	}
	ids := []string{}
	for _, r := range out.Runs {
		ids = append(ids, r.ID)
	}
	return ids, out.More
}

// TestRunsScreenListsTheNewest: a hub with a week's history lists its
// newest console.RunsLimit runs unless the query asks for more (or for all,
// limit=0), and says that older ones are left out; a page about one run
// lists that run however old it is.
func TestRunsScreenListsTheNewest(t *testing.T) {
	f := newFixture(t)
	const n = console.RunsLimit + 30
	testenv.PutFinishedRuns(t, f.st, n) // r…0 newest, one a minute back
	id := func(i int) string { return fmt.Sprintf("r%020d", i) }
	newest := func(k int) []string {
		ids := []string{}
		for i := range k {
			ids = append(ids, id(i))
		}
		return ids
	}
	p := newPage(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	_, cookie, _ := p.login()
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"", newest(console.RunsLimit), true},
		{fmt.Sprintf("?limit=%d", 2*console.RunsLimit), newest(n), false},
		{"?limit=0", newest(n), false},
		{"?since=10m", newest(10), false}, // r…10 started 10 min before the query began
	} {
		ids, more := listMore(t, p, cookie, tc.query)
		if diff := cmp.Diff(tc.want, ids); diff != "" || more != tc.more {
			t.Errorf("GET /api/runs%s: more %v, want %v; runs (-want +got):\n%s", tc.query, more, tc.more, diff)
		}
	}

	oldest := id(n - 1)
	scoped := newPage(t, console.New(f.h, console.Options{Run: oldest}), console.GuardOptions{})
	_, sc, _ := scoped.login()
	if ids, more := listMore(t, scoped, sc, ""); !cmp.Equal(ids, []string{oldest}) || more {
		t.Errorf("a page about run %s lists %v (more %v); want that run alone", oldest, ids, more)
	}
}
