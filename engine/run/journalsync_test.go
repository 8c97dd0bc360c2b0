package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/source"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// opStore is a file store that notes, in order, what happens to run
// journals (write: a line not synced; append: a line synced; sync) and
// the status each run record is written with.
type opStore struct {
	store.Store
	mu  sync.Mutex
	ops []string
}

func (s *opStore) note(op string) {
	s.mu.Lock()
	s.ops = append(s.ops, op)
	s.mu.Unlock()
}

func (s *opStore) taken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ops...)
}

func runStatus(data []byte) string {
	var r model.Run
	_ = json.Unmarshal(data, &r)
	return "record " + string(r.Status)
}

func (s *opStore) Put(ctx context.Context, kind store.Kind, id string, v any) error {
	err := s.Store.Put(ctx, kind, id, v)
	if r, ok := v.(*model.Run); ok && kind == store.Runs && err == nil {
		s.note("record " + string(r.Status))
	}
	return err
}

func (s *opStore) Update(ctx context.Context, kind store.Kind, id string, fn func([]byte) ([]byte, error)) error {
	var next []byte
	err := s.Store.Update(ctx, kind, id, func(old []byte) ([]byte, error) {
		b, err := fn(old)
		next = b
		return b, err
	})
	if kind == store.Runs && err == nil {
		s.note(runStatus(next))
	}
	return err
}

func (s *opStore) OpenLog(ctx context.Context, kind store.Kind, id string) (store.Log, error) {
	l, err := s.Store.OpenLog(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	return &opLog{Log: l, s: s}, nil
}

type opLog struct {
	store.Log
	s *opStore
}

func lineOp(op string, line []byte) string {
	var je model.JournalEntry
	_ = json.Unmarshal(line, &je)
	kind := "outcome"
	if je.Intent {
		kind = "intent"
	}
	return fmt.Sprintf("%s %s %d", op, kind, je.Seq)
}

func (l *opLog) Append(line []byte) error {
	err := l.Log.Append(line)
	l.s.note(lineOp("append", line))
	return err
}

func (l *opLog) Write(line []byte) error {
	err := l.Log.Write(line)
	l.s.note(lineOp("write", line))
	return err
}

func (l *opLog) Sync() error {
	err := l.Log.Sync()
	l.s.note("sync")
	return err
}

// TestReadOutcomesSyncedBeforeAPauseIsRecorded: a read-only call's outcome
// is written into the journal before the code sees it, without waiting for
// an fdatasync; a write's intent and outcome are synced (Append) before
// the request goes out and before the code sees the outcome; and a run
// that pauses syncs its journal before its record says it waits, so a
// resume replays every read the code saw.
func TestReadOutcomesSyncedBeforeAPauseIsRecorded(t *testing.T) {
	st := &opStore{Store: fileStore(t)}
	h := upHub(t, st, map[string]string{"SCRIPTED_TOOLS": "4"})
	t.Cleanup(h.Close)
	ctx := context.Background()

	env, err := h.Execute(ctx, `const a = await up.echo({message: "one"}); await up.record({item: a}); return a`)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("%v %+v", err, env)
	}
	paused := strings.Join(st.taken(), "; ")
	if !strings.Contains(paused, "write outcome 1; sync; record awaiting_approval") {
		t.Errorf("before the pause: %s\nwant the read's outcome written, then synced, then the record awaiting_approval", paused)
	}
	if strings.Contains(paused, "append outcome 1") {
		t.Errorf("the read's outcome was synced before the code saw it: %s", paused)
	}

	if _, err := approval.Record(ctx, h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	done, err := h.Resume(ctx, env.RunID)
	if err != nil || done.Status != "completed" {
		t.Fatalf("%v %+v", err, done)
	}
	all := strings.Join(st.taken(), "; ")
	if !strings.Contains(all, "append intent 2; append outcome 2") {
		t.Errorf("the write: %s\nwant its intent and its outcome synced", all)
	}
	if strings.Count(all, "outcome 1") != 1 {
		t.Errorf("the read's outcome was journaled again on resume: %s", all)
	}
}

// TestFinishedRunLeavesItsReadsUnsynced: a run that ends after read-only
// calls has their outcomes in its journal (and the second read's intent,
// the first call having none), written but never synced (its final record
// is not synced either; a finished run is not replayed).
func TestFinishedRunLeavesItsReadsUnsynced(t *testing.T) {
	st := &opStore{Store: fileStore(t)}
	h := upHub(t, st, nil)
	t.Cleanup(h.Close)
	ctx := context.Background()
	env, err := h.Execute(ctx, `const a = await up.echo({message: "one"}); const b = await up.echo({message: "two"}); return [a, b]`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("%v %+v", err, env)
	}
	eng, _ := h.Runs()
	if j, err := eng.Journal(ctx, env.RunID); err != nil || len(j) != 3 {
		t.Errorf("journal %+v, %v; want the 2 reads and the second's intent", j, err)
	}
	ops := strings.Join(st.taken(), "; ")
	for _, want := range []string{"write outcome 1", "write intent 2", "write outcome 2", "record completed"} {
		if !strings.Contains(ops, want) {
			t.Errorf("ops %s: no %q", ops, want)
		}
	}
	if strings.Contains(ops, "append") || strings.Contains(ops, "sync") {
		t.Errorf("a finished run's reads were synced: %s", ops)
	}
}

// gateStore holds back the writes of run records that say a run ended
// until open is closed.
type gateStore struct {
	store.Store
	open chan struct{}
}

func (s *gateStore) wait(data []byte) {
	var r model.Run
	if json.Unmarshal(data, &r) == nil && r.Status.Done() {
		<-s.open
	}
}

func (s *gateStore) Put(ctx context.Context, kind store.Kind, id string, v any) error {
	if r, ok := v.(*model.Run); ok && kind == store.Runs {
		b, _ := json.Marshal(r)
		s.wait(b)
	}
	return s.Store.Put(ctx, kind, id, v)
}

func (s *gateStore) Update(ctx context.Context, kind store.Kind, id string, fn func([]byte) ([]byte, error)) error {
	return s.Store.Update(ctx, kind, id, func(old []byte) ([]byte, error) {
		b, err := fn(old)
		if kind == store.Runs && err == nil {
			s.wait(b)
		}
		return b, err
	})
}

// TestEndedRunRecordedAfterItsEnvelope: a new run that ended returns its
// envelope without waiting for its record to be written (trivial code, and
// code that called a tool, whose record was stored at its first call);
// this process's readers of runs, and Close, wait for the record.
func TestEndedRunRecordedAfterItsEnvelope(t *testing.T) {
	for _, code := range []string{`return 1`, `return await up.echo({message: "one"})`} {
		t.Run(code, func(t *testing.T) {
			fs := fileStore(t)
			st := &gateStore{Store: fs, open: make(chan struct{})}
			h := upHub(t, st, nil) // closed by the test
			ctx := context.Background()
			env, err := h.Execute(ctx, code) // returns while its record waits at the gate
			if err != nil || env.Status != "completed" {
				t.Fatalf("%v %+v", err, env)
			}
			runs, _ := h.Runs()
			got := make(chan *model.Run, 1)
			go func() {
				r, err := runs.Get(ctx, env.RunID)
				if err != nil {
					t.Error(err)
				}
				got <- r
			}()
			closed := make(chan struct{})
			go func() { h.Close(); close(closed) }()
			select {
			case r := <-got:
				t.Fatalf("Get returned before the record was written: %+v", r)
			case <-closed:
				t.Fatal("Close returned before the record was written")
			case <-time.After(50 * time.Millisecond):
			}
			close(st.open)
			if r := <-got; r == nil || r.Status != model.RunCompleted {
				t.Fatalf("the record read after the write: %+v", r)
			}
			<-closed
			rec, err := store.Get[model.Run](ctx, fs, store.Runs, env.RunID)
			if err != nil || rec.Status != model.RunCompleted {
				t.Fatalf("the stored record: %+v %v", rec, err)
			}
		})
	}
}

// fileStore is a new file store, closed when the test ends: the wrappers
// above hide its Close from the hub's, and the spare files it makes in
// runs/ after a write must stop before the directory is removed.
func fileStore(t *testing.T) *store.File {
	t.Helper()
	fs, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fs.Close() })
	return fs
}

// upHub is a hub over st with the scripted upstream added as "up" (env: its
// environment) and its tools accepted; the caller closes it.
func upHub(t *testing.T, st store.Store, env map[string]string) *hub.Hub {
	t.Helper()
	h := hub.New(st, hub.Options{Source: source.Options{ConnectTimeout: testenv.Timeout(source.DefaultConnectTimeout)}})
	ctx := context.Background()
	p, err := h.Propose(ctx, hub.AddRequest{Namespace: "up", Command: testenv.Scripted(t), Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Accept(ctx, p); err != nil {
		t.Fatal(err)
	}
	r, err := h.PendingReview(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AcceptReview(ctx, r, nil, "test"); err != nil {
		t.Fatal(err)
	}
	return h
}
