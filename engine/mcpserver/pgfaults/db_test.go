//go:build linux

package pgfaults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
)

// writeID finds the id a run's code writes.
var writeID = regexp.MustCompile(`"([a-z][0-9]{4}-[0-9]{2})"`)

// runState is one run as the database holds it.
type runState struct {
	Run     *model.Run
	WriteID string
	Journal []model.JournalEntry
	Intent  bool // the journal has the write's intent
	Outcome bool // and its outcome: made
	Skipped bool // or a person's skip of it (it was in flight when a process died)
}

// inFlight reports whether the run waits only on calls that were in flight
// when a process stopped, undecided.
func (r *runState) inFlight() bool {
	if r.Run.Status != model.RunAwaitingApproval || len(r.Run.Pending) == 0 {
		return false
	}
	for _, p := range r.Run.Pending {
		if p.Kind != model.PendingInFlight || p.Decision != nil {
			return false
		}
	}
	return true
}

// dbView reads the hub's records in the database the way a hub process
// does (store/postgres), plus what only SQL can see.
type dbView struct {
	st   *postgres.Store
	pool *pgxpool.Pool
}

func openDB(t testing.TB, url string) *dbView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(30*time.Second))
	defer cancel()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); pool.Close() })
	return &dbView{st: st, pool: pool}
}

// runOf is the id of the run whose code writes id, or "" when the database
// has none.
func (d *dbView) runOf(ctx context.Context, id string) (string, error) {
	rows, err := d.pool.Query(ctx, `SELECT id FROM records WHERE kind = 'runs' AND position($1 in convert_from(data, 'UTF8')) > 0`, `\"`+id+`\"`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		ids = append(ids, s)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", nil
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%d runs write %s: %v", len(ids), id, ids)
}

// snapshot is every record and journal in the database: the runs that
// parse, and what does not.
type snapshot struct {
	runs     []*runState
	corrupt  []string // records and journal lines that do not parse
	orphans  []string // journals with no run record
	records  int      // records of every kind read
	journals int      // journal lines read
}

func (d *dbView) snapshot(t testing.TB) snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	var s snapshot
	for _, kind := range store.Kinds {
		ids, err := d.st.List(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			s.records++
			if kind != store.Runs {
				var v json.RawMessage
				if err := d.st.Get(ctx, kind, id, &v); err != nil {
					s.corrupt = append(s.corrupt, fmt.Sprintf("%s/%s: %v", kind, id, err))
				}
				continue
			}
			r, err := store.Get[model.Run](ctx, d.st, store.Runs, id)
			if err != nil {
				s.corrupt = append(s.corrupt, fmt.Sprintf("runs/%s: %v", id, err))
				continue
			}
			rs := &runState{Run: r}
			if m := writeID.FindStringSubmatch(r.Code); m != nil {
				rs.WriteID = m[1]
			}
			lines, err := d.st.ReadLog(ctx, store.Runs, id)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range lines {
				s.journals++
				var je model.JournalEntry
				dec := json.NewDecoder(bytes.NewReader(l))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&je); err != nil || dec.More() || je.Seq < 1 || je.Address == "" {
					s.corrupt = append(s.corrupt, fmt.Sprintf("the journal of runs/%s, line %d: %v: %s", id, i+1, err, l))
					continue
				}
				rs.Journal = append(rs.Journal, je)
				if je.Address == "up.record" {
					if je.Intent {
						rs.Intent = true
					} else if je.OK {
						rs.Outcome = true
					} else if je.Error != nil && je.Error.Code == run.CodeSkippedInFlight {
						rs.Skipped = true
					}
				}
			}
			s.runs = append(s.runs, rs)
		}
	}
	rows, err := d.pool.Query(ctx, `SELECT DISTINCT l.id FROM log_lines l WHERE l.kind = 'runs' AND NOT EXISTS (SELECT 1 FROM records r WHERE r.kind = 'runs' AND r.id = l.id)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		s.orphans = append(s.orphans, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}
