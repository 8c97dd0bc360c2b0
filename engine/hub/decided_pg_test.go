//go:build linux

package hub_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/jackc/pgx/v5"
)

// machine is one hub process over the database: its own store (its own
// pool and change feed, as postgres.Open in another process), with its
// machine's hub folder, as the CLI opens it.
type machine struct {
	*postgres.Store
	dir string
}

func (m machine) Dir() string { return m.dir }

// lockedBuffer is a log several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// pgHubs is a database and the hub processes on it.
type pgHubs struct {
	pg    *testenv.Postgres
	url   string
	hubs  []*hub.Hub
	sts   []machine
	logs  []*lockedBuffer
	calls string // the upstream's call log, shared by every process's upstream
}

// newPGHubs starts PostgreSQL and opens n hubs on one database, each as
// its own process would (its own postgres.Open), sharing one secret store
// (as the database's sealed secrets would); hub 0 adds the scripted
// upstream (its write, "record", asks).
func newPGHubs(t *testing.T, n int) *pgHubs {
	t.Helper()
	ctx := context.Background()
	p := &pgHubs{pg: testenv.StartPostgres(t), calls: filepath.Join(t.TempDir(), "calls.jsonl")}
	p.url = p.pg.NewDatabase(t)
	if err := postgres.Migrate(ctx, p.url); err != nil {
		t.Fatal(err)
	}
	secrets := secret.NewMemory(nil)
	for range n {
		s, err := postgres.Open(ctx, p.url, postgres.LeaseTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		st := machine{s, t.TempDir()}
		logs := &lockedBuffer{}
		h := hub.New(st, hub.Options{Secrets: secrets, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		t.Cleanup(h.Close)
		p.hubs, p.sts, p.logs = append(p.hubs, h), append(p.sts, st), append(p.logs, logs)
	}
	h := p.hubs[0]
	pr, err := h.Propose(ctx, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "leaky",
		SecretEnv: "SCRIPTED_TOKEN",
		Env:       map[string]string{"SCRIPTED_LEAK": "SCRIPTED_TOKEN", "SCRIPTED_CALLS": p.calls, "SCRIPTED_TOOLS": "4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, pr); err != nil {
		t.Fatal(err)
	}
	r, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Auth(ctx, hub.AuthRequest{Namespace: "leaky", Value: theSecret}); err != nil {
		t.Fatal(err)
	}
	return p
}

// listeners waits until n change feeds listen on the database, so that
// what the test writes next can reach them only by a notification.
func (p *pgHubs) listeners(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, p.pg.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		var got int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'capabilities-changes'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d change feeds listen, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// follow runs FinishDecided on the hubs until the test ends.
func (p *pgHubs) follow(t *testing.T, which ...int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, i := range which {
		wg.Go(func() {
			if err := p.hubs[i].FinishDecided(ctx); err != nil {
				t.Errorf("FinishDecided on hub %d: %v", i, err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	p.listeners(t, len(which))
	// Past the runs decided before: from now on only a notification
	// tells them of a decision.
	for _, i := range which {
		p.logged(t, i, `msg="following decisions"`)
	}
}

// logged waits until hub i's log has s.
func (p *pgHubs) logged(t *testing.T, i int, s string) {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for !strings.Contains(p.logs[i].String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("hub %d never logged %s:\n%s", i, s, p.logs[i])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// asks starts a write on hub i that waits for a person.
func (p *pgHubs) asks(t *testing.T, i int, item string) string {
	t.Helper()
	env, err := p.hubs[i].Execute(context.Background(), fmt.Sprintf(`return await leaky.record({item: %q})`, item))
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != string(model.RunAwaitingApproval) {
		t.Fatalf("the write did not ask: %s", env.Status)
	}
	return env.RunID
}

// done waits until run id is done, read through hub i.
func (p *pgHubs) done(t *testing.T, i int, id string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(testenv.Timeout(60 * time.Second))
	for {
		eng, _ := p.hubs[i].Runs()
		r, err := eng.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s is still %s after the decision: no hub resumed it", id, r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// madeOnce checks that the upstream's call log has item's write once.
func (p *pgHubs) madeOnce(t *testing.T, item string) {
	t.Helper()
	calls, _ := os.ReadFile(p.calls)
	if n := strings.Count(string(calls), item); n != 1 {
		t.Fatalf("the approved write %q was made %d times, want once:\n%s", item, n, calls)
	}
}

// resumedBy waits until a hub logs that it resumed run id and lists the
// hubs that did. A hub may log it for a run another just finished (it
// found it decided, then done): the upstream's call log, not this, says
// how many times the write was made.
func (p *pgHubs) resumedBy(t *testing.T, id string) []int {
	t.Helper()
	deadline := time.Now().Add(testenv.Timeout(30 * time.Second))
	for {
		var out []int
		for i, l := range p.logs {
			if strings.Contains(l.String(), `msg="resumed a run a person decided" run=`+id) {
				out = append(out, i)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDecisionAcrossProcesses: hubs as separate processes on one
// PostgreSQL. A write asks on hub 0; the person's decision is recorded
// through hub 1's store; the hubs that follow decisions hear it by
// LISTEN/NOTIFY (their feeds listen before the decision: nothing else
// would tell them), one of them resumes the run, and the upstream's call
// log has the write once (I6); the agent's resume on hub 0 gets the
// finished envelope. A run whose holder died is taken once its lease
// expires.
func TestDecisionAcrossProcesses(t *testing.T) {
	p := newPGHubs(t, 3)
	ctx := context.Background()

	t.Run("StartedOnOneResumedOnAnother", func(t *testing.T) {
		id := p.asks(t, 0, "item-moved")
		p.follow(t, 2)
		if _, err := approval.Record(ctx, p.sts[1], approval.Request{RunID: id, Choice: model.ChoiceOnce, Channel: approval.ChannelPage}); err != nil {
			t.Fatal(err)
		}
		p.done(t, 0, id)
		p.madeOnce(t, "item-moved")
		if got := p.resumedBy(t, id); len(got) != 1 || got[0] != 2 {
			t.Errorf("resumed by hubs %v, want [2] (the only one following)", got)
		}
		back, err := p.hubs[0].Resume(ctx, id)
		if err != nil || back.Status != string(model.RunCompleted) || !strings.Contains(string(back.Result), "item-moved") {
			t.Fatalf("the agent's resume on hub 0: %v %+v", err, back)
		}
	})

	t.Run("OneOfManyResumes", func(t *testing.T) {
		ids := map[string]string{}
		for i := range 4 {
			item := fmt.Sprintf("item-race-%d", i)
			ids[item] = p.asks(t, i%3, item)
		}
		p.follow(t, 0, 1, 2)
		for _, id := range ids {
			if _, err := approval.Record(ctx, p.sts[1], approval.Request{RunID: id, Choice: model.ChoiceOnce, Channel: approval.ChannelDesktop}); err != nil {
				t.Fatal(err)
			}
		}
		for item, id := range ids {
			p.done(t, 0, id)
			p.madeOnce(t, item)
			if got := p.resumedBy(t, id); len(got) == 0 {
				t.Errorf("no hub says it resumed run %s", id)
			}
		}
	})

	t.Run("AgentResumeWaitsForTheHolder", func(t *testing.T) {
		// Another process took the decided run (it heard the decision
		// first) and has not let go yet: the agent's resume through hub 0
		// waits for it instead of answering "running in another process",
		// then gets how the run ends.
		id := p.asks(t, 0, "item-awaited")
		if _, err := approval.Record(ctx, p.sts[1], approval.Request{RunID: id, Choice: model.ChoiceOnce, Channel: approval.ChannelPage}); err != nil {
			t.Fatal(err)
		}
		release, err := p.sts[2].Hold(ctx, store.Runs, id)
		if err != nil {
			t.Fatal(err)
		}
		type answer struct {
			env *hub.Envelope
			err error
		}
		back := make(chan answer, 1)
		go func() {
			env, err := p.hubs[0].ResumeWaiting(ctx, id)
			back <- answer{env, err}
		}()
		select {
		case a := <-back:
			release()
			t.Fatalf("the agent's resume answered while another process held the run: %v %+v", a.err, a.env)
		case <-time.After(500 * time.Millisecond):
		}
		release()
		select {
		case a := <-back:
			if a.err != nil || a.env.Status != string(model.RunCompleted) || !strings.Contains(string(a.env.Result), "item-awaited") {
				t.Fatalf("the agent's resume once the holder let go: %v %+v", a.err, a.env)
			}
		case <-time.After(testenv.Timeout(60 * time.Second)):
			t.Fatal("the agent's resume never answered after the holder let go")
		}
		p.madeOnce(t, "item-awaited")
	})

	t.Run("HolderDied", func(t *testing.T) {
		id := p.asks(t, 0, "item-orphan")
		// What a process that took the run and died leaves: a lease no
		// one renews.
		c, err := pgx.Connect(ctx, p.url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `INSERT INTO holds (kind, id, owner, expires_at) VALUES ('runs', $1, 'a-dead-process', now() + interval '2 seconds')`, id); err != nil {
			t.Fatal(err)
		}
		p.follow(t, 2)
		if _, err := approval.Record(ctx, p.sts[1], approval.Request{RunID: id, Choice: model.ChoiceOnce, Channel: approval.ChannelPage}); err != nil {
			t.Fatal(err)
		}
		p.done(t, 0, id)
		p.madeOnce(t, "item-orphan")
		var left int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM holds WHERE owner = 'a-dead-process'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left != 0 {
			t.Error("the dead process's lease is still there: the run was resumed around it")
		}
	})
}

// TestListChangedAcrossProcesses: a source added through one hub process
// reaches another's OnChange functions (the MCP server's
// notifications/tools/list_changed) by LISTEN/NOTIFY, with no request.
func TestListChangedAcrossProcesses(t *testing.T) {
	p := newPGHubs(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changed := make(chan struct{}, 16)
	stop := p.hubs[1].OnChange(func() { changed <- struct{}{} })
	defer stop()
	watched := make(chan error, 1)
	go func() { watched <- p.hubs[1].Watch(ctx) }()
	p.listeners(t, 1)
	for len(changed) > 0 {
		<-changed
	}
	pr, err := p.hubs[0].Propose(ctx, hub.AddRequest{Command: testenv.Scripted(t), Namespace: "later"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.hubs[0].Accept(ctx, pr); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatal("the other process's OnChange functions did not run after a source was added")
	}
	cancel()
	if err := <-watched; err != nil {
		t.Errorf("Watch: %v", err)
	}
}
