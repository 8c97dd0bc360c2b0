package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/go-cmp/cmp"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/store"
	"github.com/capabilities-sh/capabilities/store/storetest"

	"github.com/capabilities-sh/capabilities/internal/testenv"
)

func TestFileConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		f, _, err := store.Init(filepath.Join(t.TempDir(), "hub"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	})
}

func TestMemConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMem() })
}

func TestInitModesAndIdempotence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	f, created, err := store.Init(dir)
	if err != nil || !created {
		t.Fatalf("Init = %v, created %v", err, created)
	}
	id := f.Hub().ID
	if err := f.Put(context.Background(), store.Sources, "everything", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	f2, created, err := store.Init(dir)
	if err != nil || created {
		t.Fatalf("second Init = %v, created %v; want the existing hub", err, created)
	}
	if f2.Hub().ID != id {
		t.Errorf("second Init changed the hub id")
	}
	checkModes(t, dir)
}

// checkModes asserts every directory under dir is 700 and every file 600.
func checkModes(t *testing.T, dir string) {
	t.Helper()
	probs, n := store.CheckModes(dir)
	for _, p := range probs {
		t.Error(p)
	}
	if n < 10 {
		t.Errorf("walked only %d entries", n)
	}
}

// TestSpares: run records and journals are written through empty files the
// store keeps ready in the background (the same inodes), with no name until
// then, so nothing of them is in the directory; the files are whole and mode
// 600, Close lets the unused ones go, and the named spares an earlier
// version's dead process left behind are removed once they are an hour old.
func TestSpares(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs := filepath.Join(dir, "runs")
	names := func() []string {
		entries, err := os.ReadDir(runs)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	if err := f.Put(ctx, store.Runs, "r1", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	wait := testenv.Timeout(5 * time.Second)
	deadline := time.Now().Add(wait)
	for store.SparesReady(f) < store.SpareCount {
		if time.Now().After(deadline) {
			t.Fatalf("%d spares after %v; want %d made in the background", store.SparesReady(f), wait, store.SpareCount)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := cmp.Diff([]string{"r1.json"}, names()); d != "" {
		t.Errorf("runs/ with %d spares ready (-want +got):\n%s", store.SpareCount, d)
	}
	// The files written next are made of spares: a new record, one
	// replaced, a new journal (which spare, the refill decides).
	named, missed := store.SpareUse(f)
	if err := f.Put(ctx, store.Runs, "r2", map[string]int{"n": 2}); err != nil {
		t.Fatal(err)
	}
	if err := f.Put(ctx, store.Runs, "r1", map[string]int{"n": 3}); err != nil {
		t.Fatal(err)
	}
	l, err := f.OpenLog(ctx, store.Runs, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]byte(`{"seq":1}`)); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if n, m := store.SpareUse(f); n-named != 3 || m != missed {
		t.Errorf("%d of 3 files were made of spares, %d were not", n-named, m-missed)
	}
	for id, want := range map[string]int{"r1": 3, "r2": 2} {
		var got map[string]int
		if err := f.Get(ctx, store.Runs, id, &got); err != nil || got["n"] != want {
			t.Errorf("Get %s = %v, %v; want n=%d", id, got, err, want)
		}
	}
	if lines, err := f.ReadLog(ctx, store.Runs, "r2"); err != nil || len(lines) != 1 {
		t.Errorf("ReadLog r2 = %q, %v", lines, err)
	}
	if problems, _ := store.CheckModes(dir); len(problems) > 0 {
		t.Errorf("modes: %v", problems)
	}
	if ids, _ := f.List(ctx, store.Runs); len(ids) != 2 {
		t.Errorf("List = %v; spares must not be listed", ids)
	}
	if d := cmp.Diff([]string{"r1.json", "r2.journal.jsonl", "r2.json"}, names()); d != "" {
		t.Errorf("runs/ (-want +got):\n%s", d)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := store.SparesReady(f); n != 0 {
		t.Errorf("%d spares after Close; want none", n)
	}
	// Writes after Close still work, without spares.
	if err := f.Put(ctx, store.Runs, "r3", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}

	stale := filepath.Join(runs, ".spare-stale")
	fresh := filepath.Join(runs, ".spare-fresh")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	g, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// The first write of runs starts the filler, which sweeps first.
	if err := g.Put(ctx, store.Runs, "r4", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(testenv.Timeout(5 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(stale); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a spare two hours old survived the first write of runs")
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a recent spare (maybe a live process's) was removed: %v", err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	if _, _, err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	hub := filepath.Join(dir, "hub.json")
	if err := os.WriteFile(hub, []byte(`{"schema": 99, "id": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(dir)
	if err == nil || !strings.Contains(err.Error(), "newer capabilities") || !strings.Contains(err.Error(), "schema 99") {
		t.Fatalf("Open of a newer store = %v; want a clear refusal naming the schema", err)
	}
	data, _ := os.ReadFile(hub)
	if !strings.Contains(string(data), "99") {
		t.Error("refusing the store changed hub.json")
	}
}

func TestOpenMissingHub(t *testing.T) {
	_, err := store.Open(filepath.Join(t.TempDir(), "hub"))
	if !errors.Is(err, store.ErrNoHub) || !strings.Contains(err.Error(), "hub init") {
		t.Fatalf("Open of a missing hub = %v; want ErrNoHub telling to run hub init", err)
	}
}

func TestCorruptRecordNamesFileAndLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Path(store.Sources, "broken")
	if err := os.WriteFile(p, []byte("{\n  \"namespace\": \"x\",\n  oops\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = f.Get(context.Background(), store.Sources, "broken", &map[string]any{})
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Get of a corrupt record = %v; want the path and line 3", err)
	}
}

// TestTornLogLine: a process killed inside the write(2) of a large line
// leaves part of it, with no newline. Readers leave it out, and the next
// writer cuts it off before appending, so the next line is not glued to it
// (before, the journal was "corrupt" from there on and its run could never
// resume).
func TestTornLogLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, before, want string
	}{
		{"after-lines", `{"seq":1}` + "\n" + `{"seq":2,"val`, `{"seq":1}` + "\n"},
		{"only-torn", `{"seq":1,"val`, ``},
		{"whole", `{"seq":1}` + "\n", `{"seq":1}` + "\n"},
		{"long-torn", `{"seq":1}` + "\n" + `{"seq":2,"value":"` + strings.Repeat("x", 200<<10), `{"seq":1}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "runs", tc.name+".journal.jsonl")
			if err := os.WriteFile(p, []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			lines, err := f.ReadLog(ctx, store.Runs, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.Split(tc.want, "\n"), append(toStrings(lines), "")); diff != "" {
				t.Errorf("ReadLog (-want +got):\n%s", diff)
			}
			if err := f.Append(ctx, store.Runs, tc.name, []byte(`{"seq":9}`)); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want+`{"seq":9}`+"\n", string(data)); diff != "" {
				t.Errorf("the log after the next append (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFullDiskCutsThePartialLine: a write that the disk takes only part of
// (here the file size limit, which fails a write the same way) leaves no
// part of the line for the next one to be glued to.
func TestFullDiskCutsThePartialLine(t *testing.T) {
	dir := os.Getenv("STORE_FSIZE_CHILD")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "hub")
		if _, _, err := store.Init(dir); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFullDiskCutsThePartialLine$")
		cmd.Env = append(os.Environ(), "STORE_FSIZE_CHILD="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	f, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := f.OpenLog(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append([]byte(`{"seq":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 4096, Max: 4096}); err != nil {
		t.Skip(err)
	}
	if err := l.Append([]byte(`{"seq":2,"value":"` + strings.Repeat("x", 8<<10) + `"}`)); err == nil {
		t.Fatal("a line past the file size limit was written")
	}
	if err := l.Append([]byte(`{"seq":3}`)); err != nil {
		t.Fatal(err)
	}
	lines, err := f.ReadLog(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`{"seq":1}`, `{"seq":3}`}, toStrings(lines)); diff != "" {
		t.Errorf("the log (-want +got):\n%s", diff)
	}
}

func toStrings(lines [][]byte) []string {
	out := []string{}
	for _, l := range lines {
		out = append(out, string(l))
	}
	return out
}

func TestAtomicWriteKeepsOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	if err := store.WriteFileAtomic(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	// A directory in the way of the rename makes the write fail late.
	bad := filepath.Join(dir, "sub")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteFileAtomic(bad, []byte("new")); err == nil {
		t.Fatal("writing over a non-empty directory succeeded")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if data, _ := os.ReadFile(p); string(data) != "old" {
		t.Errorf("old file = %q", data)
	}
}

// TestCrossProcessUpdates runs updates from several OS processes at once and
// checks none is lost: the per-record lock files work across processes.
func TestCrossProcessUpdates(t *testing.T) {
	if dir := os.Getenv("STORE_TEST_CHILD_DIR"); dir != "" {
		childUpdates(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "hub")
	if _, _, err := store.Init(dir); err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 30
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrossProcessUpdates$")
		cmd.Env = append(os.Environ(), "STORE_TEST_CHILD_DIR="+dir, "STORE_TEST_EACH="+strconv.Itoa(each))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	f, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := store.Get[counter](context.Background(), f, store.Profiles, "shared")
	if err != nil {
		t.Fatal(err)
	}
	if got.N != procs*each {
		t.Errorf("count = %d after %d updates from %d processes; updates were lost", got.N, procs*each, procs)
	}
}

type counter struct{ N int }

func childUpdates(t *testing.T, dir string) {
	f, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	each, _ := strconv.Atoi(os.Getenv("STORE_TEST_EACH"))
	for range each {
		err := store.UpdateJSON(context.Background(), f, store.Profiles, "shared", func(old *counter) (*counter, error) {
			if old == nil {
				old = &counter{}
			}
			old.N++
			return old, nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			t.Fatal(err)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"namespace":"everything","kind":"stdio","command":"node","args":["x"]}`))
	f.Add([]byte(`{"schema":1,"id":"abc"}`))
	f.Add([]byte(`{`))
	f.Add([]byte(``))
	f.Add([]byte(`{} {}`))
	f.Add([]byte(`{"args": 3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v struct {
			Namespace string            `json:"namespace"`
			Args      []string          `json:"args"`
			Env       map[string]string `json:"env"`
			Schema    int               `json:"schema"`
		}
		err := store.DecodeRecord("sources/x.json", data, &v)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "sources/x.json") {
				t.Fatalf("error %v is not a CorruptError naming the file", err)
			}
		}
	})
}

// TestHoldAcrossProcesses: a claim held by another process makes Hold
// return ErrBusy (the record itself stays writable), and the claim ends when
// that process is killed.
func TestHoldAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("STORE_TEST_HOLD_DIR"); dir != "" {
		f, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Hold(context.Background(), store.Runs, "r1"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("held")
		time.Sleep(time.Minute)
		return
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // writing runs starts making spare files: stop before the directory goes
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldAcrossProcesses$")
	cmd.Env = append(os.Environ(), "STORE_TEST_HOLD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line := make([]byte, 5)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "held\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	if held, err := f.Held(ctx, store.Runs, "r1"); err != nil || !held {
		t.Fatalf("Held while another process holds r1 = %v, %v; want true", held, err)
	}
	if _, err := f.Hold(ctx, store.Runs, "r1"); !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Hold while another process holds r1 = %v; want ErrBusy", err)
	}
	if err := f.Put(ctx, store.Runs, "r1", map[string]int{"n": 1}); err != nil {
		t.Fatalf("Put while another process holds r1: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if runtime.GOOS == "linux" { // elsewhere every record counts as held
		if held, err := f.Held(ctx, store.Runs, "r1"); err != nil || held {
			t.Fatalf("Held after the holder was killed = %v, %v; want false", held, err)
		}
	}
	release, err := f.Hold(ctx, store.Runs, "r1")
	if err != nil {
		t.Fatalf("Hold after the holder was killed: %v", err)
	}
	release()
}

// record has a field of each kind the store's records use.
type record struct {
	Name     string            `json:"name"`
	Count    int               `json:"count,omitempty"`
	Ratio    float64           `json:"ratio"`
	On       bool              `json:"on"`
	Args     []string          `json:"args"`
	Env      map[string]string `json:"env"`
	Meta     map[string]any    `json:"meta"`
	Schema   json.RawMessage   `json:"schema"`
	At       time.Time         `json:"at"`
	Next     *record           `json:"next"`
	Items    []record          `json:"items"`
	Embedded `json:"embedded"`
}

type Embedded struct {
	Note string `json:"note"`
}

// FuzzDecodeRecordAgreesWithEncodingJSON: DecodeRecord (segmentio's decoder,
// encoding/json's for errors) accepts what encoding/json accepts and
// decodes it to the same value, and refuses what it refuses.
func FuzzDecodeRecordAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","count":2,"ratio":0.5,"on":true,"args":["x","y"],"env":{"K":"v"},"meta":{"n":1e300,"l":[1,"2",null,{}]},"schema":{ "type" : "object" },"at":"2026-12-01T14:00:00.123Z","next":{"name":"b"},"items":[{"name":"c"}],"embedded":{"note":"é\u2028😀"}}`,
		`{"NAME":"case","Args":null,"schema":null}`,
		`{"name":"dup","name":"last"}`,
		`{"name":"a\ud800b"}`,
		"{\"name\":\"a\xffb\"}",
		`{"count":1.5}`, `{"count":"1"}`, `{"count":99999999999999999999}`,
		`{"at":"yesterday"}`, `{"schema":}`, `{"name":"a"} {}`, `[1]`, `null`, ``, ` `, `{"items":[{"items":[{"next":{"name":"deep"}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got record
		wantErr := json.Unmarshal(data, &want)
		err := store.DecodeRecord("manifests/x.json", data, &got)
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("encoding/json: %v; DecodeRecord: %v", wantErr, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), wantErr.Error()) {
				t.Fatalf("DecodeRecord's error %q does not carry encoding/json's %q", err, wantErr)
			}
			return
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decoded differently (-encoding/json +DecodeRecord):\n%s", diff)
		}
	})
}

// TestHeldTakesNothing: asking whether a record is held never refuses its
// holder. A process holds and releases a run over and over while this one
// asks as fast as it can; every Hold succeeds (taking the lock to test it,
// even for an instant, would refuse some of them).
func TestHeldTakesNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tests a lock without taking it")
	}
	if dir := os.Getenv("STORE_TEST_HELD_DIR"); dir != "" {
		f, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5000 {
			release, err := f.Hold(context.Background(), store.Runs, "r1")
			if err != nil {
				t.Fatalf("Hold %d while another process asks: %v", i, err)
			}
			release()
		}
		return
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "hub")
	f, _, err := store.Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeldTakesNothing$")
	cmd.Env = append(os.Environ(), "STORE_TEST_HELD_DIR="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	asked, sawHeld := 0, false
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the holding process: %v\n%s", err, out.String())
			}
			if asked == 0 {
				t.Fatal("the holding process ended before it was asked about once")
			}
			t.Logf("asked %d times while it held and released (held seen: %v)", asked, sawHeld)
			return
		default:
		}
		held, err := f.Held(ctx, store.Runs, "r1")
		if err != nil {
			t.Fatal(err)
		}
		sawHeld = sawHeld || held
		asked++
	}
}

// TestRemovedWhileRefilling: `rm -rf` of a hub while its process refills
// its spares (right after a write) removes it whole the first time: the
// spares have no name in runs/ (named ones made rmdir fail with
// "directory not empty").
func TestRemovedWhileRefilling(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		dir := filepath.Join(t.TempDir(), "hub")
		f, _, err := store.Init(dir)
		if err != nil {
			t.Fatal(err)
		}
		for j := range 30 {
			if err := f.Put(ctx, store.Runs, fmt.Sprintf("r%d", j), map[string]int{"n": j}); err != nil {
				t.Fatal(err)
			}
		}
		// The refill starts 5 ms after the last write and makes 64 files.
		time.Sleep(time.Duration(i%10) * time.Millisecond)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("trial %d: removing the hub while its spares are refilled: %v", i, err)
		}
		f.Close()
	}
}
