package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

// TestRunActions: POST /api/runs/{run}/resume goes on only with an
// interrupted run (recorded running, held by no process), and /cancel ends
// one that has not finished; everything else is refused with why, and a
// page about one run acts on no other. Neither moves without the session's
// CSRF token, nor from another site.
func TestRunActions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	paused := f.pending(t, `return await up.record({item: "x"})`)
	now := time.Now().UTC()
	put := func(status model.RunStatus) string {
		t.Helper()
		id := "r" + store.NewID()[:20]
		if err := f.st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: status, Code: "return 40 + 2", Seed: 1, Clock: now, Attempts: 1, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	stopped, done, live := put(model.RunRunning), put(model.RunCompleted), put(model.RunRunning)
	release, err := f.st.Hold(ctx, store.Runs, live) // an attempt going on (another open file: another process, to the lock)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	g, link := serve(t, console.New(f.h, console.Options{}), console.GuardOptions{})
	b := newBrowser(t, g.Origin())
	b.login(link)
	var a console.Approvals
	b.get("/api/approvals", &a)
	if len(a.Interrupted) != 1 || a.Interrupted[0].Run != stopped {
		t.Fatalf("the approvals poll lists %+v as interrupted; want only %s", a.Interrupted, stopped)
	}

	type answer struct {
		Code   int
		Error  string
		Status string
	}
	act := func(b *browser, method, path string) answer {
		t.Helper()
		code, data := b.do(method, path, map[string]any{})
		var v struct {
			Status string
			Error  struct{ Code string }
		}
		_ = json.Unmarshal(data, &v)
		return answer{code, v.Error.Code, v.Status}
	}
	for _, tc := range []struct {
		name, path string
		want       answer
	}{
		{"resume a paused run", "/api/runs/" + paused + "/resume", answer{http.StatusConflict, "not_interrupted", ""}},
		{"resume a live run", "/api/runs/" + live + "/resume", answer{http.StatusConflict, "not_interrupted", ""}},
		{"resume a finished run", "/api/runs/" + done + "/resume", answer{http.StatusConflict, "not_interrupted", ""}},
		{"resume no run", "/api/runs/r0000000000000000none/resume", answer{http.StatusNotFound, "not_found", ""}},
		{"cancel a finished run", "/api/runs/" + done + "/cancel", answer{http.StatusConflict, "completed", ""}},
		{"resume the interrupted run", "/api/runs/" + stopped + "/resume", answer{http.StatusOK, "", "completed"}},
		{"resume it again", "/api/runs/" + stopped + "/resume", answer{http.StatusConflict, "not_interrupted", ""}},
		{"cancel the paused run", "/api/runs/" + paused + "/cancel", answer{http.StatusOK, "", "cancelled"}},
	} {
		if diff := cmp.Diff(tc.want, act(b, http.MethodPost, tc.path)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if r := f.run(t, stopped); r.Status != model.RunCompleted || string(r.Result) != "42" {
		t.Errorf("the resumed run is %s with %s; want completed with 42", r.Status, r.Result)
	}

	// Only with the session's token, and from the page itself.
	noToken := newBrowser(t, b.origin)
	noToken.c = b.c
	if got := act(noToken, http.MethodPost, "/api/runs/"+live+"/cancel"); got.Code != http.StatusForbidden || got.Error != "csrf" {
		t.Errorf("cancel without the CSRF token: %+v; want 403 csrf", got)
	}
	if f.run(t, live).Status != model.RunRunning {
		t.Error("a refused cancel cancelled the run")
	}

	// A page about one run acts on that run only.
	og, oneLink := serve(t, console.New(f.h, console.Options{Run: paused}), console.GuardOptions{})
	one := newBrowser(t, og.Origin())
	one.login(oneLink)
	for _, what := range []string{"resume", "cancel"} {
		if got := act(one, http.MethodPost, "/api/runs/"+live+"/"+what); got.Code != http.StatusForbidden || got.Error != "other_run" {
			t.Errorf("%s of another run on a page about one: %+v; want 403 other_run", what, got)
		}
	}
}
