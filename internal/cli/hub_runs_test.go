package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/store"
	"github.com/google/go-cmp/cmp"
)

func TestParseAgeAndSince(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "0d", want: now},
		{in: "2026-11-30T08:00:00Z", want: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		{in: "2026-11-30", want: time.Date(2026, 11, 30, 0, 0, 0, 0, time.Local)},
		{in: "-3d", bad: true},
		{in: "3 days", bad: true},
		{in: "yesterday", bad: true},
	} {
		got, err := parseSince(tc.in, now)
		if tc.bad {
			if err == nil {
				t.Errorf("parseSince(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestRunsFiltersAndPrune: hub runs --since, --namespace and --status keep
// exactly the matching runs; runs prune (by the settings' retention, 30
// days here) deletes the runs that ended before then, with their journals,
// and keeps a run that waits for a person however old, and the recent
// ones; --older-than prunes by its own age.
func TestRunsFiltersAndPrune(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CAPABILITIES_HOME", home)
	st, _, err := store.Init(filepath.Join(home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now().UTC()
	day := 24 * time.Hour
	runs := []struct {
		id     string
		status model.RunStatus
		age    time.Duration
		calls  []string
	}{
		{"r00000000000000000old", model.RunCompleted, 40 * day, []string{"writer.record"}},
		{"r0000000000000oldwait", model.RunAwaitingApproval, 40 * day, []string{"reader.echo"}},
		{"r000000000000000week", model.RunFailed, 5 * day, []string{"reader.echo"}},
		{"r000000000000000hour", model.RunCompleted, time.Hour, []string{"reader.echo", "writer.record"}},
	}
	for _, r := range runs {
		at := now.Add(-r.age)
		rec := model.Run{ID: r.id, Status: r.status, CreatedAt: at, UpdatedAt: at, Attempts: 1}
		if r.status == model.RunAwaitingApproval { // a call waits for a person, with no expiry
			rec.Pending = []model.Pending{{ID: "c1", Kind: model.PendingApproval, Address: r.calls[0]}}
		}
		if err := st.Put(ctx, store.Runs, r.id, rec); err != nil {
			t.Fatal(err)
		}
		for i, a := range r.calls {
			line, _ := json.Marshal(model.JournalEntry{Seq: i + 1, Address: a, OK: true, Value: json.RawMessage(`1`), At: at})
			if err := st.Append(ctx, store.Runs, r.id, line); err != nil {
				t.Fatal(err)
			}
		}
	}
	st.Close()
	list := func(args ...string) []string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"hub", "runs", "--json"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("hub runs %v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
		}
		var out struct{ Runs []struct{ ID string } }
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, r := range out.Runs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--since", "7d"}, []string{"r000000000000000hour", "r000000000000000week"}},
		{[]string{"--since", "2h"}, []string{"r000000000000000hour"}},
		{[]string{"--namespace", "writer"}, []string{"r000000000000000hour", "r00000000000000000old"}},
		{[]string{"--namespace", "reader", "--status", "failed"}, []string{"r000000000000000week"}},
		{[]string{"--namespace", "reader", "--since", "30d"}, []string{"r000000000000000hour", "r000000000000000week"}},
		{[]string{"--limit", "2"}, []string{"r000000000000000hour", "r000000000000000week"}},
		{[]string{"--limit", "1", "--namespace", "writer"}, []string{"r000000000000000hour"}},
		{[]string{"--limit", "1", "--status", "failed"}, []string{"r000000000000000week"}},
	} {
		if diff := cmp.Diff(tc.want, list(tc.args...)); diff != "" {
			t.Errorf("hub runs %v (-want +got):\n%s", tc.args, diff)
		}
	}
	// --limit: a last line, and "more" in JSON, say that older runs are
	// left out; --limit 0 lists them all.
	for _, tc := range []struct {
		limit string
		runs  int
		more  bool
	}{{"3", 3, true}, {"4", 4, false}, {"0", 4, false}} {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{"hub", "runs", "--json", "--limit", tc.limit}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("hub runs --limit %s: exit %d\n%s", tc.limit, code, stderr.String())
		}
		var out struct {
			Runs []struct{ ID string }
			More bool
		}
		if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Runs) != tc.runs || out.More != tc.more {
			t.Errorf("hub runs --json --limit %s: %d runs, more %v (%v); want %d, more %v", tc.limit, len(out.Runs), out.More, err, tc.runs, tc.more)
		}
		stdout.Reset()
		if code := Main([]string{"hub", "runs", "--limit", tc.limit}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("hub runs --limit %s: exit %d\n%s", tc.limit, code, stderr.String())
		}
		if said := strings.Contains(stdout.String(), "Older runs are not listed: --limit"); said != tc.more {
			t.Errorf("hub runs --limit %s says older runs are left out: %v, want %v\n%s", tc.limit, said, tc.more, stdout.String())
		}
	}
	for _, bad := range [][]string{{"runs", "--limit", "-1"}, {"runs", "--since", "yesterday"}, {"runs", "prune", "--max-mb", "0"}, {"runs", "prune", "--older-than", "soon"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"hub"}, bad...), strings.NewReader(""), &stdout, &stderr); code != exitUsage {
			t.Errorf("hub %v: exit %d, want %d\n%s", bad, code, exitUsage, stderr.String())
		}
	}
	if err := os.WriteFile(filepath.Join(home, "hub", "settings.json"), []byte(`{"runRetentionDays": 30}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prune := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := Main(append([]string{"hub", "runs", "prune", "--json"}, args...), strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("runs prune %v: exit %d\n%s", args, code, stderr.String())
		}
		return stdout.String()
	}
	if out := prune(); !strings.Contains(out, `"pruned": 1`) || !strings.Contains(out, `"kept": 3`) {
		t.Errorf("runs prune by the settings: %s", out)
	}
	if diff := cmp.Diff([]string{"r000000000000000hour", "r000000000000000week", "r0000000000000oldwait"}, list()); diff != "" {
		t.Errorf("runs after the prune (-want +got):\n%s", diff)
	}
	if out := prune("--older-than", "3d"); !strings.Contains(out, `"pruned": 1`) {
		t.Errorf("runs prune --older-than 3d: %s", out)
	}
	if diff := cmp.Diff([]string{"r000000000000000hour", "r0000000000000oldwait"}, list()); diff != "" {
		t.Errorf("runs after prune --older-than 3d (-want +got):\n%s", diff)
	}
	st, err = store.Open(filepath.Join(home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if lines, _ := st.ReadLog(ctx, store.Runs, "r00000000000000000old"); len(lines) != 0 {
		t.Errorf("the pruned run's journal is still there: %d lines", len(lines))
	}
}

// TestRunsShowSaysAReadWasRepeated: `hub runs show` notes, on its call, a
// read made again after an interrupted attempt (its journal outcome marked
// repeated), and on no other call.
func TestRunsShowSaysAReadWasRepeated(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CAPABILITIES_HOME", home)
	st, _, err := store.Init(filepath.Join(home, "hub"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, at := "r0000000000000repeats", time.Now().UTC()
	if err := st.Put(ctx, store.Runs, id, model.Run{ID: id, Status: model.RunCompleted, CreatedAt: at, UpdatedAt: at, Attempts: 2, Result: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	for _, je := range []model.JournalEntry{
		{Seq: 1, Address: "reader.echo", Intent: true, At: at},
		{Seq: 1, Address: "reader.echo", OK: true, Value: json.RawMessage(`1`), At: at},
		{Seq: 2, Address: "reader.sleep", Intent: true, At: at}, // the interrupted attempt's
		{Seq: 2, Address: "reader.sleep", Intent: true, At: at},
		{Seq: 2, Address: "reader.sleep", OK: true, Value: json.RawMessage(`2`), At: at, Repeated: true},
	} {
		line, _ := json.Marshal(je)
		if err := st.Append(ctx, store.Runs, id, line); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"hub", "runs", "show", id}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("hub runs show: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var calls []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "reader.") {
			calls = append(calls, strings.Join(slices.Delete(f, 2, 4), " ")) // without the duration
		}
	}
	want := []string{"reader.echo ok", "reader.sleep ok (read repeated after an interrupted attempt)"}
	if d := cmp.Diff(want, calls); d != "" {
		t.Errorf("the calls hub runs show lists (-want +got):\n%s\n%s", d, stdout.String())
	}
}
