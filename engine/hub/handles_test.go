package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/run"
	"github.com/capabilities-sh/capabilities/engine/sandbox"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/store"
)

// bigCode reads leaky.big (about 5 MB, the credential in every row) as a
// handle, every 64 KB slice of it, and JSON paths; it returns what it saw.
const bigCode = `
const h = await leaky.big({});
let n = 0, len = 0, off = 0;
while (off < h.size) {
  const part = await hub.read(h, {offset: off, length: 65536});
  n++; len += part.length;
  off += 65536;
}
const id = await hub.read(h.handle, {jsonPath: "$.rows[3].id"});
const row = await hub.read(h, {jsonPath: "$['rows'][2]"});
let tooLong;
try { await hub.read(h, {length: 65537}) } catch (e) { tooLong = e.code }
return {handle: h.handle, size: h.size, type: h.type, preview: h.preview.slice(0, 12), previewLen: h.preview.length, keys: Object.keys(h).sort(), n, len, id, rowId: row.id, tooLong};
`

// TestLargeResultIsAHandle: a 5 MB tool result reaches the code as
// {handle, size, type, preview}; hub.read gives 64 KB slices that put
// together are the stored content, and a JSON path's value. The content
// was scrubbed whole before it was stored: no slice the code read (each is
// journaled) holds the credential or a piece of it at either edge, though
// the upstream put it in every row at shifting offsets.
func TestLargeResultIsAHandle(t *testing.T) {
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_BIG": "5000000"})
	ctx := context.Background()
	env, err := f.h.Execute(ctx, bigCode)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("status %s: %+v", env.Status, env.Error)
	}
	var got struct {
		Handle, Type, Preview, TooLong string
		Size, PreviewLen, N, Len       int
		Keys                           []string
		ID, RowID                      int
	}
	if err := json.Unmarshal(env.Result, &got); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	want := "handle-" + env.RunID + "-1"
	if got.Handle != want || got.Type != "json" || got.Preview != `{"rows":[{"i` || got.PreviewLen != 1024 || strings.Join(got.Keys, ",") != "handle,preview,size,type" {
		t.Errorf("handle %+v, want %s of type json with a 1 KB preview", got, want)
	}
	if got.Size < 4500000 || got.N != (got.Size+65535)/65536 || got.Len != got.Size {
		t.Errorf("size %d, %d slices of %d bytes in all", got.Size, got.N, got.Len)
	}
	if got.ID != 3 || got.RowID != 2 || got.TooLong != "invalid_arguments" {
		t.Errorf("jsonPath: id %d, row %d; length over 64 KB: %q", got.ID, got.RowID, got.TooLong)
	}
	blob, err := store.Get[struct{ Content string }](ctx, f.st, store.Blobs, want)
	if err != nil {
		t.Fatal(err)
	}
	assertNoSecret(t, "the stored handle", blob.Content)
	if n := strings.Count(blob.Content, scrub.Marker); n < 1000 {
		t.Errorf("the credential was redacted %d times, want once per row", n)
	}
	runs, _ := f.h.Runs()
	journal, err := runs.Journal(ctx, env.RunID)
	if err != nil {
		t.Fatal(err)
	}
	half := len(theSecret) / 2
	reads := 0
	var joined strings.Builder
	for _, je := range journal {
		if je.Address != sandbox.AddressRead {
			continue
		}
		reads++
		var part string
		if json.Unmarshal(je.Value, &part) != nil {
			continue
		}
		if reads <= got.N {
			joined.WriteString(part)
		}
		assertNoSecret(t, "a slice", part)
		if strings.HasSuffix(part, theSecret[:half]) || strings.HasPrefix(part, theSecret[half:]) {
			t.Errorf("slice %d holds half the credential at its edge", je.Seq)
		}
		if len(je.Value) > 2*65536+2 {
			t.Errorf("slice %d is %d bytes in the journal", je.Seq, len(je.Value))
		}
	}
	if joined.String() != blob.Content {
		t.Errorf("the slices the code read, put together (%d bytes), are not the stored content (%d bytes)", joined.Len(), len(blob.Content))
	}
	if reads != got.N+3 {
		t.Errorf("%d hub.read calls journaled, want %d", reads, got.N+3)
	}
	if raw, _ := os.ReadFile(f.st.Dir() + "/runs/" + env.RunID + ".journal.jsonl"); len(raw) > 20<<20 {
		t.Errorf("the journal is %d bytes", len(raw))
	}
}

// TestHandleReplay: a run that read a large result, then paused for a
// write, gets the same handle on resume from the journal, with the same
// content, and the upstream is not called again for it.
func TestHandleReplay(t *testing.T) {
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_BIG": "200000"})
	ctx := context.Background()
	code := `const h = await leaky.big({});
const first = await hub.read(h, {jsonPath: "$.rows[1].id"});
await leaky.record({item: h.handle});
return [h.handle, h.size, first, await hub.read(h, {offset: 10, length: 20})]`
	env, err := f.h.Execute(ctx, code)
	if err != nil || env.Status != "awaiting_approval" {
		t.Fatalf("execute: %v %+v", err, env)
	}
	if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	env, err = f.h.Resume(ctx, env.RunID)
	if err != nil || env.Status != "completed" {
		t.Fatalf("resume: %v %+v", err, env)
	}
	var got []any
	_ = json.Unmarshal(env.Result, &got)
	if len(got) != 4 || got[0] != "handle-"+env.RunID+"-1" || got[2] != float64(1) || got[3] != `"id":0,"text":"aaaaa` {
		t.Errorf("result %s", env.Result)
	}
	calls, _ := os.ReadFile(f.calls)
	if n := strings.Count(string(calls), `"name":"big"`); n != 1 {
		t.Errorf("big was called %d times, want once (the resume replays it)", n)
	}
}

// TestLargeRunResultIsAHandle: a run whose result does not fit the
// envelope returns a handle and a preview instead of a cut string, and
// another run reads it with hub.read.
func TestLargeRunResultIsAHandle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `return {rows: Array.from({length: 5000}, (_, i) => ({i, name: "row " + i}))}`)
	if err != nil || env.Status != "completed" {
		t.Fatalf("execute: %v %+v", err, env)
	}
	var h run.Handle
	if err := json.Unmarshal(env.Result, &h); err != nil || h.Handle != "handle-"+env.RunID+"-result" || h.Type != "json" || !strings.HasPrefix(h.Preview, `{"rows":[{"i":0,"name":"row 0"}`) || h.Size < 100000 {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if env.Truncated != nil && env.Truncated.Result {
		t.Errorf("the result is marked cut: %+v", env.Truncated)
	}
	env, err = f.h.Execute(ctx, `return await hub.read("`+h.Handle+`", {jsonPath: "$.rows[4999].name"})`)
	if err != nil || env.Status != "completed" || string(env.Result) != `"row 4999"` {
		t.Fatalf("reading it: %v %+v %s", err, env, env.Result)
	}
}
