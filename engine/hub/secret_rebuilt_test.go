package hub_test

import (
	"bytes"
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/capabilities-sh/capabilities/engine/approval"
	"github.com/capabilities-sh/capabilities/engine/hub"
	"github.com/capabilities-sh/capabilities/engine/model"
	"github.com/capabilities-sh/capabilities/engine/scrub"
	"github.com/capabilities-sh/capabilities/engine/secret"
	"github.com/capabilities-sh/capabilities/internal/testenv"
	"github.com/capabilities-sh/capabilities/store"
)

// allForms is every form of v a leak check looks for: the scrubber's own
// list (scrub.Forms) and encodings computed here, independently of it.
func allForms(v string) map[string]string {
	out := forms(v)
	for i, f := range scrub.Forms(v) {
		out[fmt.Sprintf("scrub.Forms[%d]", i)] = f
	}
	b32 := base32.StdEncoding.EncodeToString([]byte(v))
	out["base32"] = b32
	out["base32-lower-raw"] = strings.ToLower(strings.TrimRight(b32, "="))
	out["url-twice"] = url.QueryEscape(url.QueryEscape(v))
	var lower, upper strings.Builder
	for _, r := range v {
		fmt.Fprintf(&lower, `\u%04x`, r)
		fmt.Fprintf(&upper, `\u%04X`, r)
	}
	out["json-all-escaped"] = lower.String()
	out["json-all-escaped-upper"] = upper.String()
	out["base64-of-url"] = base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(v)))
	return out
}

// leaksIn names the forms of theSecret in text, also once line breaks
// (real, or JSON's \n and \r escapes) are taken out: a wrapped base64 is
// the secret still.
func leaksIn(text string) []string {
	unwrapped := strings.NewReplacer("\r", "", "\n", "", `\r`, "", `\n`, "").Replace(text)
	var found []string
	for name, f := range allForms(theSecret) {
		if strings.Contains(text, f) || strings.Contains(unwrapped, f) {
			found = append(found, name)
		}
	}
	return found
}

func assertNoForm(t *testing.T, where, text string) {
	t.Helper()
	if found := leaksIn(text); len(found) > 0 {
		t.Errorf("the secret reached %s as %v", where, found)
	}
}

// assertDirClean greps every file under dir for every form of the secret.
func assertDirClean(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := testenv.ReadFiles(dir, func(p string, data []byte) {
		n++
		assertNoForm(t, p, string(data))
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no file under %s: the check proves nothing", dir)
	}
}

// TestLeakChecksSeeEveryForm: the leak checks below would see the secret in
// each form the adversarial upstream and code produce (so a clean result
// means something).
func TestLeakChecksSeeEveryForm(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString([]byte(theSecret))
	var wrapped strings.Builder
	for i := 0; i < len(b64); i += 8 {
		wrapped.WriteString(b64[i:min(i+8, len(b64))] + "\n")
	}
	j, _ := json.Marshal(map[string]string{"w": wrapped.String()})
	for name, text := range map[string]string{
		"raw":             "x" + theSecret + "y",
		"wrapped base64":  wrapped.String(),
		"wrapped in JSON": string(j),
		"hex":             fmt.Sprintf("%x", theSecret),
		"all escaped":     allForms(theSecret)["json-all-escaped"],
	} {
		if len(leaksIn(text)) == 0 {
			t.Errorf("%s: not seen", name)
		}
	}
}

// TestInvariantI1SecretRebuiltByCode: an upstream gives each half of its
// credential in a separate result (no scrubber can tell a half from data),
// and other results hide it behind \u escapes, base32, wrapped base64,
// double URL-encoding and a 64 KB boundary. Code joins the halves, logs the
// secret, returns it raw, as btoa() and as hex, passes it to a write that
// pauses (the pending arguments' preview), throws it in an error, and
// decodes the hidden forms. The paused run is resumed in another process
// that never resolved the credential itself. No form of the secret is in
// any envelope, any log, or any file under the hub directory (run records,
// journals).
func TestInvariantI1SecretRebuiltByCode(t *testing.T) {
	f := newFixtureEnv(t, map[string]string{"SCRIPTED_CORPUS": "1"})
	ctx := context.Background()
	marker := scrub.New(theSecret).Marker()

	check := func(what string, env *hub.Envelope) {
		t.Helper()
		b, _ := json.Marshal(env)
		assertNoForm(t, what, string(b))
	}

	// 1. Join the halves; pause on a write that gets the secret.
	env, err := f.h.Execute(ctx, `
const a = await leaky.leakPart({part: 1});
const b = await leaky.leakPart({part: 2});
const s = a.half + b.half;
console.log("joined:", s);
console.log(btoa(s));
const hex = Array.from(s, (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
console.log(hex);
let wrote;
try { wrote = await leaky.record({item: s}); } catch (e) { wrote = e.code + ": " + e.message + " " + s; }
return { s, b64: btoa(s), hex, wrote, url: encodeURIComponent(s), json: JSON.stringify({s}) };`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "awaiting_approval" || len(env.Pending) != 1 {
		t.Fatalf("the write did not pause: %s %+v", env.Status, env.Error)
	}
	if gets := f.spy.Gets(); len(gets) == 0 {
		t.Fatal("the credential was never read: the test proves nothing")
	}
	if !bytes.Contains(env.Pending[0].Args, []byte(marker)) {
		t.Errorf("the pending arguments do not show %s where the secret was: %s", marker, env.Pending[0].Args)
	}
	check("the pending envelope", env)
	assertDirClean(t, f.storeDir(t))
	runID := env.RunID

	// 2. A person denies the write; another process resumes the run. It
	// resolved no credential for a call of its own: the secret comes back
	// from the journal's halves only.
	if _, err := approval.Record(ctx, f.st, approval.Request{RunID: runID, Choice: model.ChoiceDeny, Channel: approval.ChannelCLI}); err != nil {
		t.Fatal(err)
	}
	st2, err := store.Open(f.st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	spy2 := secret.NewSpy(f.spy.Store)
	var logs2 bytes.Buffer
	h2 := hub.New(st2, hub.Options{Secrets: spy2, Logger: slog.New(slog.NewTextHandler(&logs2, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	t.Cleanup(h2.Close)
	env, err = h2.Resume(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("resume: %s %+v", env.Status, env.Error)
	}
	var res struct{ S, B64, Hex, Wrote, URL, JSON string }
	if err := json.Unmarshal(env.Result, &res); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if res.S != marker || !strings.HasPrefix(res.Wrote, "approval_denied") {
		t.Errorf("the resumed run returned %+v, want s = %s and the write denied", res, marker)
	}
	check("the resumed envelope", env)
	assertNoForm(t, "the resuming process's log", logs2.String())
	// What runs show and execute({resume}) render, in a third process.
	st3, err := store.Open(f.st.Dir())
	if err != nil {
		t.Fatal(err)
	}
	h3 := hub.New(st3, hub.Options{Secrets: secret.NewSpy(f.spy.Store)})
	t.Cleanup(h3.Close)
	eng, err := h3.Runs()
	if err != nil {
		t.Fatal(err)
	}
	shown, err := eng.Envelope(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	check("the envelope rendered in a third process", shown)

	// 3. Thrown in an error.
	env, err = f.h.Execute(ctx, `
const s = (await leaky.leakPart({part: 1})).half + (await leaky.leakPart({part: 2})).half;
throw new Error("upstream said no to " + s + " / " + btoa(s));`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "failed" || env.Error == nil || !strings.Contains(env.Error.Message, "upstream said no to "+marker) {
		t.Errorf("thrown: %s %+v", env.Status, env.Error)
	}
	check("a failed run's envelope", env)

	// 4. The adversarial corpus: escapes, base32, wrapped base64, double
	// URL-encoding, a 64 KB boundary; code decodes what it can.
	env, err = f.h.Execute(ctx, `
const tryAtob = (s) => { try { return atob(s.replace(/\n/g, "")); } catch (e) { return "not base64: " + s; } };
const esc = await leaky.leakEscaped({});
const forms = await leaky.leakForms({});
// Over 64 KB, it arrives as a handle: read it whole, slice by slice
// (a slice ends at byte 65536, where the credential was on the wire).
const bigH = await leaky.leakBig({});
let big = "";
for (let off = 0; off < bigH.size; off += 65536) big += await hub.read(bigH, {offset: off, length: 65536});
const dec = {
  token: esc.token, header: esc.header,
  base32: forms.base32, base32lower: forms.base32lower,
  wrapped: tryAtob(forms.wrapped), mime: tryAtob(forms.mime),
  doubleURL: decodeURIComponent(decodeURIComponent(forms.doubleURL)),
};
console.log(JSON.stringify(dec));
const at = big.search(/[^x]/);
console.log(big.slice(at - 20, at + 60));
return { dec, bigLength: big.length, around: big.slice(at - 20, at + 60) };`)
	if err != nil {
		t.Fatal(err)
	}
	if env.Status != "completed" {
		t.Fatalf("corpus run: %s %+v", env.Status, env.Error)
	}
	var corpus struct {
		Dec       map[string]string
		BigLength int
		Around    string
	}
	if err := json.Unmarshal(env.Result, &corpus); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
	if corpus.Dec["token"] != marker || corpus.BigLength < 64<<10 || !strings.HasPrefix(corpus.Around, strings.Repeat("x", 20)+marker) {
		t.Errorf("the code saw %+v, want each secret as %s (entering the sandbox scrubbed)", corpus, marker)
	}
	check("the corpus envelope", env)

	// Nothing anywhere: the hub's logs, every file under the hub directory.
	assertNoForm(t, "the hub's log", f.logs.String())
	assertDirClean(t, f.storeDir(t))
	if gets := spy2.Gets(); len(gets) == 0 {
		t.Error("the resuming process never read the credential: its scrubber could not know the secret the code rebuilt")
	}
}
