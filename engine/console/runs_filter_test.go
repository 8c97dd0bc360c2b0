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
		w := p.send(request{method: http.MethodGet, target: "/api/runs" + query, cookie: cookie})
		var out console.Runs
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil {
			t.Fatalf("GET /api/runs%s: %d %s", query, w.Code, w.Body)
		}
		ids := []string{}
		for _, r := range out.Runs {
			ids = append(ids, r.ID)
		}
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
	for query, want := range map[string]string{
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
