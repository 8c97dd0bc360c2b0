package console_test

import (
	"context"
	"encoding/json"
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
