package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/internal/testenv"
)

// TestInvariantI4CredentialStaysOnItsOrigin: an upstream gives its
// credential in two halves (no half is a secret); code joins them and
// passes the whole to another source: raw, as base64, URL-encoded, inside a
// longer string, reversed inside hex, and to a write (which would ask).
// Each call is refused with secret_to_other_origin, naming whose credential
// it is and never its value, before any person is asked, and the other
// upstream receives nothing; the same value passed back to its own source
// goes out.
func TestInvariantI4CredentialStaysOnItsOrigin(t *testing.T) {
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_CORPUS": "1"})
	ctx := context.Background()
	otherCalls := filepath.Join(t.TempDir(), "other-calls.jsonl")
	addReviewed(t, f.h, hub.AddRequest{
		Command:   testenv.Scripted(t),
		Namespace: "other",
		Env:       map[string]string{"SCRIPTED_CALLS": otherCalls, "SCRIPTED_TOOLS": "4"},
	})

	env, err := f.h.Execute(ctx, `
const s = (await leaky.leakPart({part: 1})).half + (await leaky.leakPart({part: 2})).half;
const hex = (x) => Array.from(x, (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
const sends = {
  raw: s, base64: btoa(s), url: encodeURIComponent(s), inside: "Authorization: Bearer " + s + " (from leaky)",
  reversedHex: hex(s.split("").reverse().join("")),
};
const out = {};
for (const [k, v] of Object.entries(sends)) {
  try { out[k] = await other.echo({message: v}); } catch (e) { out[k] = {code: e.code, message: e.message}; }
}
try { await other.record({item: "token " + s}); out.write = "sent"; } catch (e) { out.write = {code: e.code, message: e.message}; }
out.halfAlone = await other.echo({message: (await leaky.leakPart({part: 1})).half});
out.own = await leaky.echo({message: s});
return out;`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("run %s: %+v", env.Status, env.Error)
	}
	var out map[string]json.RawMessage
	b, _ := json.Marshal(env.Result)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	for _, k := range []string{"raw", "base64", "url", "inside", "reversedHex", "write"} {
		var got struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(out[k], &got)
		if got.Code != hub.CodeSecretToOtherOrigin {
			t.Errorf("%s: the call was not refused: %s", k, b)
			continue
		}
		if !strings.Contains(got.Message, "leaky/default") || !strings.Contains(got.Message, "other.") || !strings.Contains(got.Message, "(this call goes to other)") {
			t.Errorf("%s: the message does not say whose credential and which call: %q", k, got.Message)
		}
	}
	assertNoForm(t, "the envelope", string(b))
	calls, _ := os.ReadFile(otherCalls)
	if n := strings.Count(string(calls), `"name":"echo"`); n != 1 {
		t.Errorf("the other upstream got %d echo calls, want 1 (the half alone):\n%s", n, calls)
	}
	if strings.Contains(string(calls), `"name":"record"`) || strings.Contains(string(calls), theSecret[len(theSecret)/2:]) {
		t.Errorf("the other upstream got the second half:\n%s", calls)
	}
	own, _ := os.ReadFile(f.calls)
	if !strings.Contains(string(own), `"name":"echo"`) {
		t.Errorf("the credential's own source did not get the call with it:\n%s", own)
	}
}

// TestCallThatCanNeverRunNeverAsks: a write (policy asks) whose arguments
// the tool's schema rejects fails inside the code at once: no person is
// asked for a call that could not run after "Allow" (issue 37, item 2), and
// the upstream gets nothing.
func TestCallThatCanNeverRunNeverAsks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env, err := f.h.Execute(ctx, `
const out = {};
try { await leaky.record({}); } catch (e) { out.missing = e.code + ": " + e.message; }
try { await leaky.record({item: 42}); } catch (e) { out.wrongType = e.code; }
return out;`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" || len(env.Pending) != 0 {
		t.Fatalf("run %s with %d pending, want completed without asking: %+v", env.Status, len(env.Pending), env.Error)
	}
	b, _ := json.Marshal(env.Result)
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("result %s: %v", b, err)
	}
	if !strings.HasPrefix(out["missing"], "invalid_arguments: ") || !strings.Contains(out["missing"], "item") || out["wrongType"] != "invalid_arguments" {
		t.Errorf("the invalid writes did not fail with the schema's error: %s", b)
	}
	calls, _ := os.ReadFile(f.calls)
	if strings.Contains(string(calls), `"name":"record"`) {
		t.Errorf("the upstream got a record call:\n%s", calls)
	}
}
