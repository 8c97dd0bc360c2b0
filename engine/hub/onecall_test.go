package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/google/go-cmp/cmp"
)

// TestOneCallAsTheSandboxRunsIt: code that is one tool call whose value it
// returns runs without JavaScript (hub's oneCallRun). Each case runs on two
// hubs, one that takes that path and one that runs every code in the
// sandbox, and what the model gets (the envelope), what the upstream got
// (each call's arguments, once) and what the journal keeps are the same:
// values, scrubbed secrets, tool errors, refused arguments, a write that
// asks and is approved, a result the envelope cuts, a tool the code cannot
// reach.
func TestOneCallAsTheSandboxRunsIt(t *testing.T) {
	cases := []string{
		`return await leaky.echo({message: "hi"})`,
		"return leaky.echo({message: 'it\\'s \"q\" \\u00e9 😀\\n', extra: [1, 2.5, -3, true, null, {a: {}}],});",
		`return await leaky.leak()`,
		`return await leaky.leakError({})`,
		`return await leaky.echo({})`,
		`return await leaky.echo({message: 7})`,
		`return await leaky.sleep({ms: 1})`,
		`return await leaky["echo"]({message: "by index"})`,
		"const named = await leaky.echo({message: \"named\"})\nreturn named;",
		"let e = await leaky.leakError({});\n  return e",
		`return await leaky.record({item: "x"})`,
		`return await leaky.big({})`,
		`return await leaky.nope({})`,
		`return await leaky.echo({message: "x"}, {connection: "work"})`,
	}
	type seen struct {
		Envelopes []string
		Upstream  []string
		Journal   []string
	}
	runAll := func(t *testing.T, oneCall bool) seen {
		hub.SetOneCall(t, oneCall)
		f := newFixtureEnv(t, map[string]string{"SCRIPTED_BIG": "30000"})
		ctx := context.Background()
		var s seen
		for _, code := range cases {
			env, err := f.h.Execute(ctx, code)
			if err != nil {
				t.Fatalf("%s: %v", code, err)
			}
			if env.Status == "awaiting_approval" {
				if _, err := approval.Record(ctx, f.h.Store(), approval.Request{RunID: env.RunID, Choice: model.ChoiceOnce, Channel: approval.ChannelCLI}); err != nil {
					t.Fatal(err)
				}
				s.Envelopes = append(s.Envelopes, normal(env.RunID, env))
				if env, err = f.h.Resume(ctx, env.RunID); err != nil {
					t.Fatal(err)
				}
			}
			eng, err := f.h.Runs()
			if err != nil {
				t.Fatal(err)
			}
			journal, err := eng.Journal(ctx, env.RunID)
			if err != nil {
				t.Fatal(err)
			}
			for i := range journal {
				journal[i].Millis, journal[i].At = 0, time.Time{}
			}
			s.Journal = append(s.Journal, normal(env.RunID, journal))
			s.Envelopes = append(s.Envelopes, normal(env.RunID, env))
		}
		b, err := os.ReadFile(f.calls)
		if err != nil {
			t.Fatal(err)
		}
		s.Upstream = strings.Split(strings.TrimSpace(string(b)), "\n")
		return s
	}
	want := runAll(t, false)
	before := hub.OneCallRuns()
	got := runAll(t, true)
	// Each case but the last three, and the approved write's resume.
	if n := hub.OneCallRuns() - before; n != int64(len(cases)-3+1) {
		t.Errorf("%d attempts took the one-call path, want %d", n, len(cases)-3+1)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the one-call path differs from the sandbox (-sandbox +one call):\n%s", d)
	}
	// The cases reach what they are meant to: a value, a scrubbed secret, a
	// tool error, a pause, a cut result, a TypeError.
	var statuses []string
	for _, e := range want.Envelopes {
		var env hub.Envelope
		if err := json.Unmarshal([]byte(e), &env); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, env.Status)
	}
	if !strings.Contains(strings.Join(statuses, " "), "completed failed failed failed completed completed completed failed awaiting_approval completed completed failed failed") {
		t.Errorf("statuses: %v", statuses)
	}
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), theSecret) {
		t.Error("the secret reached the envelope or the journal")
	}
}

// normal is v as JSON, without what differs from run to run: the run's
// id, and how long each call took.
func normal(runID string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return msField.ReplaceAllString(strings.ReplaceAll(string(b), runID, "RUN"), `"ms":0`)
}

var msField = regexp.MustCompile(`"ms":[0-9]+`)
