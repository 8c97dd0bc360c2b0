package elicit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/console"
	"github.com/capabilities-sh/capabilities/engine/elicit"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
)

// twoProcesses opens two Stores on one fresh database: two pools, as two
// hub processes have.
func twoProcesses(t *testing.T, pg *testenv.Postgres) (a, b *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	u := pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return open(), open()
}

// TestSharedAcrossProcesses: with a database store, what one hub process
// signs or issues is good on any other, and spent once across all of
// them: an elicitation state, an approval page link, the bearer token.
func TestSharedAcrossProcesses(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := context.Background()

	t.Run("ElicitationState", func(t *testing.T) {
		a, b := twoProcesses(t, pg)
		// Both processes start together: they agree on one key.
		var sa, sb *elicit.Signer
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() { sa, errA = elicit.LoadSignerFrom(ctx, a) })
		wg.Go(func() { sb, errB = elicit.LoadSignerFrom(ctx, b) })
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		exp := time.Now().Add(time.Hour)
		// Both processes get the same answer at once, again and again:
		// each time exactly one decision is recorded.
		for i := range 10 {
			id := fmt.Sprintf("r%d", i)
			run := model.Run{ID: id, Status: model.RunAwaitingApproval, Pending: []model.Pending{
				{ID: "c1", Kind: model.PendingApproval, Address: "up.write", ExpiresAt: exp},
			}}
			if err := a.Put(ctx, store.Runs, id, run); err != nil {
				t.Fatal(err)
			}
			state := sa.Sign(id, []string{"c1"}, 10*time.Minute)
			if _, err := sb.Verify(state); err != nil {
				t.Fatalf("a state signed on process A, checked on B: %v", err)
			}
			answers := map[string]elicit.Answer{"c1": {Action: "accept", Choice: "once"}}
			var na, nb int
			wg.Go(func() { na, errA = elicit.Record(ctx, a, sa, state, answers) })
			wg.Go(func() { nb, errB = elicit.Record(ctx, b, sb, state, answers) })
			wg.Wait()
			if na+nb != 1 || (errA == nil) == (errB == nil) {
				t.Fatalf("the same state answered on two processes: decided %d and %d, errors %v and %v; want one decision and one refusal", na, nb, errA, errB)
			}
			refusal := errA
			if refusal == nil {
				refusal = errB
			}
			if !strings.Contains(refusal.Error(), "already") {
				t.Errorf("the second answer was refused with %q; want it to say the answer was already used", refusal)
			}
			got, err := store.Get[model.Run](ctx, b, store.Runs, id)
			if err != nil {
				t.Fatal(err)
			}
			if d := got.Pending[0].Decision; d == nil || d.Choice != model.ChoiceOnce || d.Channel != "elicitation" {
				t.Errorf("decision = %+v; want once through elicitation", d)
			}
			if len(got.UsedNonces) != 1 {
				t.Errorf("used nonces = %q; want the state's one, once", got.UsedNonces)
			}
		}
		// A state signed with another hub's key is refused.
		other := elicit.NewSigner([]byte(strings.Repeat("x", 32)), nil)
		if _, err := sb.Verify(other.Sign("r1", []string{"c1"}, time.Minute)); !errors.Is(err, elicit.ErrBadState) {
			t.Errorf("a state of another key: %v; want ErrBadState", err)
		}
	})

	t.Run("PageLink", func(t *testing.T) {
		a, b := twoProcesses(t, pg)
		page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("the page")) })
		ga, err := console.NewGuard(page, "127.0.0.1:4801", console.GuardOptions{Links: a})
		if err != nil {
			t.Fatal(err)
		}
		gb, err := console.NewGuard(page, "127.0.0.1:4802", console.GuardOptions{Links: b})
		if err != nil {
			t.Fatal(err)
		}
		// What a browser sends to a guard at addr with the link's token.
		open := func(g *console.Guard, addr, link string) *httptest.ResponseRecorder {
			u, err := url.Parse(link)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "http://"+addr+"/?"+u.RawQuery, nil)
			r.RemoteAddr = "127.0.0.1:50000"
			r.Host = addr
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			return w
		}
		link, err := ga.Link()
		if err != nil {
			t.Fatal(err)
		}
		// Made on A, opened on B: it works, once.
		if w := open(gb, "127.0.0.1:4802", link); w.Code != http.StatusSeeOther || len(w.Result().Cookies()) != 1 {
			t.Fatalf("A's link on B: %d %q; want 303 with the session cookie", w.Code, w.Body)
		}
		for name, try := range map[string]func() *httptest.ResponseRecorder{
			"again on B": func() *httptest.ResponseRecorder { return open(gb, "127.0.0.1:4802", link) },
			"then on A":  func() *httptest.ResponseRecorder { return open(ga, "127.0.0.1:4801", link) },
		} {
			if w := try(); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "already used") {
				t.Errorf("a spent link %s: %d %q; want 403 already used", name, w.Code, w.Body)
			}
		}
		// Two processes open the same fresh link at once: one session.
		link2, err := gb.Link()
		if err != nil {
			t.Fatal(err)
		}
		var codes [2]int
		var wg sync.WaitGroup
		wg.Go(func() { codes[0] = open(ga, "127.0.0.1:4801", link2).Code })
		wg.Go(func() { codes[1] = open(gb, "127.0.0.1:4802", link2).Code })
		wg.Wait()
		if !(codes[0] == http.StatusSeeOther) != (codes[1] == http.StatusSeeOther) || codes[0]+codes[1] != http.StatusSeeOther+http.StatusForbidden {
			t.Errorf("one link opened on two processes at once: %v; want one 303 and one 403", codes)
		}
		// A link past its time opens nothing on a page that lives longer.
		later := func() time.Time { return time.Now().Add(console.DefaultLifetime + time.Hour) }
		gl, err := console.NewGuard(page, "127.0.0.1:4803", console.GuardOptions{Links: b, Now: later, Expires: time.Now().Add(3 * console.DefaultLifetime)})
		if err != nil {
			t.Fatal(err)
		}
		link3, err := ga.Link()
		if err != nil {
			t.Fatal(err)
		}
		if w := open(gl, "127.0.0.1:4803", link3); w.Code != http.StatusGone || !strings.Contains(w.Body.String(), "link expired") {
			t.Errorf("an expired link: %d %q; want 410 link expired", w.Code, w.Body)
		}
		// An altered link, or one signed by another hub, opens nothing.
		c, _, _ := strings.Cut(link2, "token=")
		tok, _ := url.QueryUnescape(strings.TrimPrefix(link2, c+"token="))
		i := strings.LastIndexByte(tok, '.')
		for name, bad := range map[string]string{
			"altered expiry": tok[:strings.IndexByte(tok, '.')] + ".9999999999" + tok[i:],
			"no signature":   tok[:i],
			"random":         "abc",
		} {
			if w := open(ga, "127.0.0.1:4801", "http://x/?token="+url.QueryEscape(bad)); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "not valid") {
				t.Errorf("%s: %d %q; want 403 not valid", name, w.Code, w.Body)
			}
		}
	})

	t.Run("BearerToken", func(t *testing.T) {
		a, b := twoProcesses(t, pg)
		if _, err := a.LookupKey(ctx, postgres.KeyHTTPToken); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("LookupKey before any serve = %v; want ErrNotFound", err)
		}
		var ta, tb string
		var ca, cb bool
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() { ta, ca, errA = a.HTTPToken(ctx) })
		wg.Go(func() { tb, cb, errB = b.HTTPToken(ctx) })
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if ta != tb || len(ta) != 64 {
			t.Errorf("two processes starting together got tokens of %d and %d characters, equal: %v; want one 64-character token", len(ta), len(tb), ta == tb)
		}
		if ca == cb {
			t.Errorf("created = %v and %v; want exactly one process to have made it", ca, cb)
		}
	})
}
